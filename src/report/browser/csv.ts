/**
 * CSV as RFC 4180 and spreadsheets read it: fields separated by commas, records by CRLF; a field
 * with a comma, a quote, a line break or edge spaces is quoted, its quotes doubled.
 *
 * A text a spreadsheet would run as a formula (it starts with =, +, -, @, a tab or a carriage
 * return) gets a leading apostrophe: comments, test names and pages are visitor or customer
 * input, and `=HYPERLINK(...)` in a feedback comment must stay text when an analyst opens the
 * export. Spreadsheets skip white space (spaces, line feeds) before a formula, and some read the
 * fullwidth signs ＝ ＋ － ＠ as their ASCII forms, so those start a formula too. Numbers
 * (-1.5) are left alone, and so is what the page formatted itself (`ownText`: "+15.55 to
 * +19.26", an interval of lift), which is no one's input.
 */
export function toCsv(
  rows: readonly (readonly string[])[],
  ownText: (row: number, column: number) => boolean = () => false,
): string {
  return `${rows.map((row, r) => row.map((value, c) => csvField(value, ownText(r, c))).join(',')).join('\r\n')}\r\n`;
}

const FORMULA_START = /^[\t\r]|^\s*[=+\-@\uFF1D\uFF0B\uFF0D\uFF20]/;
const NUMBER = /^[-+]?\d+(\.\d+)?(e[-+]?\d+)?%?$/i;

export function csvField(value: string, ownText = false): string {
  const text = !ownText && FORMULA_START.test(value) && !NUMBER.test(value) ? `'${value}` : value;
  return /[",\r\n]|^\s|\s$/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}
