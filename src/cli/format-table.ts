import { oneLine, wrapAnsi } from '../log/terminal-text.js';

/** A column's heading; `short` is its abbreviation, used only where the full heading makes the table too wide. */
export type Heading = string | { readonly name: string; readonly short: string };

/** The text of a table, and whether it stayed a table or became records (one per row). */
export interface FittedTable {
  text: string;
  form: 'table' | 'records';
}

/**
 * Left-aligned text columns, numbers right-aligned: enough for a terminal summary. See fitTable
 * for what happens on a terminal `columns` wide that the table does not fit.
 */
export function formatTable(
  header: readonly Heading[],
  rows: readonly (readonly (string | number)[])[],
  columns?: number,
): string {
  return fitTable(header, rows, columns).text;
}

/**
 * The table as it is when it fits `columns` (or the width is unknown: a pipe or a file). Else
 * the same table made narrower, each step only when the one before is not enough: headings
 * broken between their words onto several lines, then headings abbreviated (a line under the
 * table says what each abbreviation stands for), then the widest text column wrapped. Only when
 * none fits is each row shown as a record of its own, a line per column, as psql's expanded
 * display (`\x auto`) shows it: a table the terminal breaks at its edge scatters every row over
 * two lines and no column lines up any more.
 */
export function fitTable(
  header: readonly Heading[],
  rows: readonly (readonly (string | number)[])[],
  columns?: number,
): FittedTable {
  const cells = rows.map((row) => header.map((_, i) => oneLine(String(row[i] ?? ''))));
  const numeric = rows.map((row) => header.map((_, i) => typeof row[i] === 'number'));
  const names = header.map((h) => oneLine(typeof h === 'string' ? h : h.name));
  const shorts = header.map((h) => oneLine(typeof h === 'string' ? h : h.short));
  const attempts: Layout[] = [
    { headings: names, wrapHeadings: false, numeric },
    { headings: names, wrapHeadings: true, numeric },
    { headings: shorts, wrapHeadings: true, numeric },
  ];
  for (const layout of columns === undefined ? attempts.slice(0, 1) : attempts) {
    const widths = naturalWidths(layout, cells);
    if (columns === undefined || tableWidth(widths) <= columns)
      return { text: render(layout, cells, widths, names, columns), form: 'table' };
  }
  const last = attempts[2] as Layout;
  const narrowed = columns === undefined ? undefined : narrowWidestText(last, cells, columns);
  if (narrowed !== undefined)
    return {
      text: render({ ...last, wrapColumn: narrowed.column }, cells, narrowed.widths, names, columns),
      form: 'table',
    };
  // A header the terminal would break says no more than this.
  if (rows.length === 0) return { text: '(none)', form: 'records' };
  return { text: expanded(names, cells, columns ?? 0), form: 'records' };
}

/** How a table is laid out: its headings (full or short), broken between words or not, and which column wraps. */
interface Layout {
  headings: readonly string[];
  wrapHeadings: boolean;
  /** Per row and column: a number, right-aligned. */
  numeric: readonly (readonly boolean[])[];
  wrapColumn?: number;
}

const GAP = '  ';

/** Narrower than this, a wrapped column says too little a line: the rows become records instead. */
const MIN_WRAPPED_WIDTH = 10;

function tableWidth(widths: readonly number[]): number {
  return widths.reduce((sum, w) => sum + w, 0) + GAP.length * Math.max(0, widths.length - 1);
}

/** Each column as wide as its widest cell and its heading (or the heading's longest word). */
function naturalWidths(layout: Layout, cells: readonly (readonly string[])[]): number[] {
  return layout.headings.map((heading, i) =>
    Math.max(headingWidth(heading, layout.wrapHeadings), ...cells.map((row) => row[i]?.length ?? 0)),
  );
}

function headingWidth(heading: string, wrap: boolean): number {
  return wrap ? Math.max(0, ...heading.split(' ').map((word) => word.length)) : heading.length;
}

/**
 * A text column made as narrow as the others leave room for, its cells wrapped: the widest whose
 * cells all break between words (or after `..`) at that width, else the widest of all; undefined
 * when the room is narrower than MIN_WRAPPED_WIDTH or than a word of its heading.
 */
export function narrowWidestText(
  layout: Layout,
  cells: readonly (readonly string[])[],
  columns: number,
): { column: number; widths: number[] } | undefined {
  const widths = naturalWidths(layout, cells);
  const room = (i: number) => columns - (tableWidth(widths) - (widths[i] ?? 0));
  const candidates = widths
    .map((width, column) => ({ width, column }))
    .filter(({ column }) => cells.length > 0 && !layout.numeric.every((row) => row[column]))
    .filter(
      ({ column }) =>
        room(column) >= Math.max(MIN_WRAPPED_WIDTH, headingWidth(layout.headings[column] ?? '', true)),
    )
    .sort((a, b) => b.width - a.width);
  const whole = candidates.find(({ column }) =>
    cells.every(
      (row) =>
        Math.max(...(row[column] ?? '').split(/(?<= )|(?<=\.\.)/).map((t) => t.trim().length)) <=
        room(column),
    ),
  );
  const chosen = whole ?? candidates[0];
  if (chosen === undefined) return undefined;
  return { column: chosen.column, widths: widths.map((w, i) => (i === chosen.column ? room(i) : w)) };
}

/** The heading lines, the rows (a wrapped cell continues on lines of its own), and the abbreviations used. */
function render(
  layout: Layout,
  cells: readonly (readonly string[])[],
  widths: readonly number[],
  names: readonly string[],
  columns: number | undefined,
): string {
  const headingLines = layout.headings.map((heading, i) =>
    layout.wrapHeadings && heading.length > (widths[i] ?? 0) ? wrapWords(heading, widths[i] ?? 0) : [heading],
  );
  const header = stack(headingLines, widths, () => false);
  const body = cells.flatMap((row, r) =>
    stack(
      row.map((cell, i) =>
        i === layout.wrapColumn && cell.length > (widths[i] ?? 0) ? wrapCell(cell, widths[i] ?? 0) : [cell],
      ),
      widths,
      (i) => layout.numeric[r]?.[i] === true,
    ),
  );
  const legend = abbreviations(layout.headings, names);
  const legendLines =
    legend === ''
      ? []
      : (columns === undefined ? legend : wrapAnsi(legend, columns, { hard: true })).split('\n');
  return [...header, ...body, ...legendLines].join('\n');
}

/** Cells of several lines side by side: line n of each cell on one line, padded to its column. */
function stack(
  parts: readonly (readonly string[])[],
  widths: readonly number[],
  rightAligned: (column: number) => boolean,
): string[] {
  const height = Math.max(1, ...parts.map((p) => p.length));
  return Array.from({ length: height }, (_, n) =>
    parts
      .map((p, i) => {
        const text = p[n] ?? '';
        return rightAligned(i) ? text.padStart(widths[i] ?? 0) : text.padEnd(widths[i] ?? 0);
      })
      .join(GAP)
      .trimEnd(),
  );
}

/**
 * A cell on lines at most `width` long, broken after a space or after the `..` of a range
 * (`2026-01-01..2026-03-10`), a longer word cut where the width ends.
 */
export function wrapCell(text: string, width: number): string[] {
  const lines: string[] = [''];
  for (const token of text.split(/(?<= )|(?<=\.\.)/)) {
    const last = lines.at(-1) ?? '';
    if ((last + token).trimEnd().length <= width) lines[lines.length - 1] = last + token;
    else {
      let rest = token;
      while (rest.trimEnd().length > width) {
        lines.push(rest.slice(0, width));
        rest = rest.slice(width);
      }
      lines.push(rest);
    }
  }
  const shown = lines.map((line) => line.trim()).filter((line) => line !== '');
  return shown.length === 0 ? [''] : shown;
}

/** Words on lines at most `width` long (a longer word stands alone). */
function wrapWords(text: string, width: number): string[] {
  const lines: string[] = [];
  for (const word of text.split(' ')) {
    const last = lines.at(-1);
    if (last !== undefined && last.length + 1 + word.length <= width)
      lines[lines.length - 1] = `${last} ${word}`;
    else lines.push(word);
  }
  return lines;
}

/** `abbreviations: win = windows, ins = inserted`, or '' when every heading is whole. */
function abbreviations(shown: readonly string[], names: readonly string[]): string {
  const used = shown.flatMap((s, i) => (s === names[i] ? [] : [`${s} = ${names[i] ?? ''}`]));
  return used.length === 0 ? '' : `abbreviations: ${used.join(', ')}`;
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
