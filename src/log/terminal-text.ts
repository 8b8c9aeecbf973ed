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
