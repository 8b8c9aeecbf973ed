import { oneLine, wrapAnsi } from '../log/terminal-text.js';

/**
 * Left-aligned text columns, numbers right-aligned: enough for a terminal summary. On a terminal
 * `columns` wide that the table does not fit, each row is shown as a record of its own, a line per
 * column, as psql's expanded display (`\x auto`) shows it: a table the terminal breaks at its edge
 * scatters every row over two lines and no column lines up any more.
 */
export function formatTable(
  header: readonly string[],
  rows: readonly (readonly (string | number)[])[],
  columns?: number,
): string {
  const cells = [header, ...rows].map((row) => row.map((cell) => oneLine(String(cell))));
  const widths = header.map((_, i) => Math.max(...cells.map((row) => row[i]?.length ?? 0)));
  const lines = cells.map((row, r) =>
    row
      .map((cell, i) => {
        const numeric = r > 0 && typeof rows[r - 1]?.[i] === 'number';
        return numeric ? cell.padStart(widths[i] ?? 0) : cell.padEnd(widths[i] ?? 0);
      })
      .join('  ')
      .trimEnd(),
  );
  if (columns === undefined || lines.every((line) => line.length <= columns)) return lines.join('\n');
  // A header the terminal would break says no more than this.
  if (rows.length === 0) return '(none)';
  return expanded(cells[0] ?? [], cells.slice(1), columns);
}

/** Narrower than this, a value gets no column of its own: it goes on as the terminal breaks it. */
const MIN_VALUE_WIDTH = 16;

/** Each row as `-[ RECORD n ]-` and a line `label | value` per column, long values wrapped. */
function expanded(labels: readonly string[], rows: readonly (readonly string[])[], columns: number): string {
  const labelWidth = Math.max(...labels.map((label) => label.length));
  const valueWidth = columns - labelWidth - 3;
  return rows
    .flatMap((row, r) => {
      const lines = labels.flatMap((label, i) => {
        const value = row[i] ?? '';
        const parts =
          valueWidth >= MIN_VALUE_WIDTH && value.length > valueWidth
            ? wrapAnsi(value, valueWidth, { hard: true, trim: true }).split('\n')
            : [value];
        return parts.map((part, n) => `${(n === 0 ? label : '').padEnd(labelWidth)} | ${part}`.trimEnd());
      });
      const widest = Math.min(columns, Math.max(...lines.map((line) => line.length)));
      return [`-[ RECORD ${r + 1} ]`.padEnd(widest, '-'), ...lines];
    })
    .join('\n');
}
