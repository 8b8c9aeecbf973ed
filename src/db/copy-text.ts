/** A value as COPY's text format writes it; null becomes \N. */
export type CopyValue = string | number | boolean | Date | null;

/**
 * Encodes one row for `COPY ... FROM STDIN` (text format): tab-separated, newline-terminated,
 * with backslash, tab, newline and carriage return escaped.
 */
export function copyLine(values: readonly CopyValue[]): string {
  let line = '';
  for (let i = 0; i < values.length; i++) {
    if (i > 0) line += '\t';
    line += encode(values[i] ?? null);
  }
  return `${line}\n`;
}

function encode(value: CopyValue): string {
  if (value === null) return '\\N';
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : '\\N';
  if (typeof value === 'boolean') return value ? 't' : 'f';
  if (value instanceof Date) return value.toISOString();
  // The NUL character cannot be stored in a Postgres text value at all.
  return value.replace(/[\\\t\n\r\0]/g, escapeChar);
}

function escapeChar(char: string): string {
  switch (char) {
    case '\\':
      return '\\\\';
    case '\t':
      return '\\t';
    case '\n':
      return '\\n';
    case '\r':
      return '\\r';
    default:
      return '';
  }
}
