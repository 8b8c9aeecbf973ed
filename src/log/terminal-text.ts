import { createRequire } from 'node:module';
import type WrapAnsi from 'wrap-ansi';

/**
 * What reaches a terminal from the database or the API is text a stranger may have written: a
 * source name with ESC sequences (inserted by the serve role, or sent by the service) clears the
 * screen or moves the cursor to print a forged line. Every line the CLI prints, and every log line
 * drawn for a terminal, passes through here: each control character becomes its visible escape
 * (`\u001b`), which is also what JSON would show, so `status --json` keeps its meaning.
 *
 * Escaped: C0 (but newline and tab in multi-line text), DEL, C1 (0x9b is CSI on some terminals),
 * and the bidirectional overrides and isolates that reorder what is shown.
 */

// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point.
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point.
const CONTROL_OR_LINE_BREAK = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/**
 * wrap-ansi builds an Intl.Segmenter when it loads (ICU data: tens of ms of every command's
 * start-up): it loads on the first line wrapped, so output to a file or a pipe, and --help, never
 * pay for it. `require` because printing is synchronous.
 */
let wrapAnsiLoaded: typeof WrapAnsi | undefined;
export function wrapAnsi(...args: Parameters<typeof WrapAnsi>): string {
  wrapAnsiLoaded ??= (createRequire(import.meta.url)('wrap-ansi') as { default: typeof WrapAnsi }).default;
  return wrapAnsiLoaded(...args);
}

const visible = (character: string) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`;

/** Multi-line output (a table, a report): newlines and tabs kept, every other control shown. */
export function terminalText(text: string): string {
  return text.replace(CONTROL, visible);
}

/** One value on one line (a cell, a name in a message): a newline in it cannot start a forged line. */
export function oneLine(value: string): string {
  return value.replace(CONTROL_OR_LINE_BREAK, visible);
}

/** The only way command output reaches stdout: see the top of this file. */
export function printOut(text: string): void {
  process.stdout.write(terminalText(text));
}

/** The only way a command's own lines (not the log) reach stderr. */
export function printErr(text: string): void {
  process.stderr.write(terminalText(text));
}

/**
 * Sentences for a terminal `columns` wide: a line wider than that is broken between words and
 * continued two spaces further in, where a terminal would break it mid-word. Left whole: a line
 * with a gap of two spaces after its indent (a table row, aligned text), a line indented four
 * spaces or more (a command to copy, code), and every line when `columns` is unknown (output to a
 * file or a pipe stays one line per message, for grep).
 * Widths are display widths (wrap-ansi): a source name in CJK takes two columns a character.
 */
export function wrapProse(text: string, columns: number | undefined): string {
  if (columns === undefined || columns < 20) return text;
  const options = { hard: false, trim: true } as const;
  return text
    .split('\n')
    .map((line) => {
      const indent = /^ */.exec(line)?.[0] ?? '';
      const body = line.slice(indent.length);
      if (
        indent.length >= 4 ||
        body.includes('  ') ||
        !wrapAnsi(body, columns - indent.length, options).includes('\n')
      )
        return line;
      return wrapAnsi(body, columns - indent.length - 2, options)
        .split('\n')
        .map((part, i) => `${indent}${i === 0 ? '' : '  '}${part}`)
        .join('\n');
    })
    .join('\n');
}

/** The width of `stream` when it is a terminal; undefined for a file or a pipe. */
export function terminalColumns(stream: NodeJS.WriteStream): number | undefined {
  return stream.isTTY ? stream.columns : undefined;
}

/** Command output that is mostly sentences (a run summary, status): see wrapProse. */
export function printProse(text: string): void {
  process.stdout.write(wrapProse(terminalText(text), terminalColumns(process.stdout)));
}

/** A command's own sentences on stderr (an error, a notice): see wrapProse. */
export function printProseErr(text: string): void {
  process.stderr.write(wrapProse(terminalText(text), terminalColumns(process.stderr)));
}
