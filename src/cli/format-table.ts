import { oneLine } from '../log/terminal-text.js';

/** Left-aligned text columns, numbers right-aligned: enough for a terminal summary. */
export function formatTable(
  header: readonly string[],
  rows: readonly (readonly (string | number)[])[],
): string {
  const cells = [header, ...rows].map((row) => row.map((cell) => oneLine(String(cell))));
  const widths = header.map((_, i) => Math.max(...cells.map((row) => row[i]?.length ?? 0)));
  return cells
    .map((row, r) =>
      row
        .map((cell, i) => {
          const numeric = r > 0 && typeof rows[r - 1]?.[i] === 'number';
          return numeric ? cell.padStart(widths[i] ?? 0) : cell.padEnd(widths[i] ?? 0);
        })
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}
