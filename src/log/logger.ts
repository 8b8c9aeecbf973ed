import { createRequire } from 'node:module';
import { Writable } from 'node:stream';
import { type Logger, pino } from 'pino';
import { oneLine, terminalText } from './terminal-text.js';

export type { Logger } from 'pino';

/**
 * Paths that may hold a secret. pino removes them before a line is written, so a key that slips
 * into a log call never reaches stdout or a file.
 */
const REDACTED_PATHS = [
  'apiKey',
  'api_key',
  'token',
  'webhookToken',
  'authorization',
  'headers.authorization',
  'req.headers.authorization',
  '*.apiKey',
  '*.api_key',
  '*.token',
  '*.webhookToken',
  '*.authorization',
  // The HMAC key of pii: hash (src/privacy/pii.ts).
  'piiKey',
  '*.piiKey',
  'pii.key',
  '*.pii.key',
];

export interface LoggerOptions {
  level?: string;
  /**
   * Human-friendly lines (LOG_FORMAT=pretty) or JSON (LOG_FORMAT=json). Default: pretty only when
   * stderr, where the logs go, is a terminal (and not CI).
   */
  pretty?: boolean;
  destination?: NodeJS.WritableStream;
}

/** Something drawn on the last line of a terminal (a progress bar) that log lines must not garble. */
export interface DrawnLine {
  clear(): void;
  redraw(): void;
}

/**
 * A terminal stream shared by the log and a progress bar: while a bar is drawn, each log line
 * clears it, is written on its own line, and the bar is drawn again below it.
 */
export interface TerminalLines {
  readonly target: NodeJS.WritableStream;
  /** What the logger writes to. */
  readonly stream: Writable;
  setDrawn(drawn: DrawnLine | undefined): void;
}

export function terminalLines(target: NodeJS.WritableStream): TerminalLines {
  let drawn: DrawnLine | undefined;
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      drawn?.clear();
      target.write(chunk);
      drawn?.redraw();
      callback();
    },
  });
  return { target, stream, setDrawn: (line) => (drawn = line) };
}

/** stderr, where the logs and the progress bar go: one process, one terminal. */
export const stderrLines: TerminalLines = terminalLines(process.stderr);

const require = createRequire(import.meta.url);

export function createLogger(options: LoggerOptions = {}): Logger {
  const pretty = options.pretty ?? (Boolean(process.stderr.isTTY) && !process.env.CI);
  const base = {
    level: options.level ?? process.env.LOG_LEVEL ?? 'info',
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    base: undefined,
  };
  // On a terminal the lines go through stderrLines, so they never garble a progress bar.
  const destination = options.destination ?? (process.stderr.isTTY ? stderrLines.stream : undefined);
  if (pretty) {
    // In this thread (not a transport's worker, which would write to fd 2 past stderrLines).
    const prettyStream = require('pino-pretty') as typeof import('pino-pretty');
    return pino(
      // JSON escapes what it carries; a line drawn for a terminal shows it: its text is made safe.
      { ...base, hooks: { logMethod: terminalSafeArguments }, formatters: { log: terminalSafeFields } },
      prettyStream({ colorize: Boolean(process.stderr.isTTY), destination: destination ?? process.stderr }),
    );
  }
  // JSON lines are read by log shippers and people alike: the level by name, the time in ISO 8601 (UTC).
  const json = { ...base, formatters: { level: levelByName }, timestamp: pino.stdTimeFunctions.isoTime };
  if (destination) return pino(json, destination as pino.DestinationStream);
  // Logs go to stderr so stdout stays clean for command output (status --json, tables). Written
  // as logged (pino's default queues them): a command's own last line, written straight to
  // stderr, would otherwise come before the log lines that led to it.
  return pino(json, pino.destination({ dest: 2, sync: true }));
}

/** `"level":"warn"` instead of pino's number 40. */
function levelByName(label: string): { level: string } {
  return { level: label };
}

function terminalSafeArguments(this: Logger, args: Parameters<pino.LogFn>, method: pino.LogFn): void {
  const safe = args.map((arg) => (typeof arg === 'string' ? oneLine(arg) : arg));
  method.apply(this, safe as Parameters<pino.LogFn>);
}

/** Every string of a log line's fields, at any depth (an error's message included). */
function terminalSafeFields(object: Record<string, unknown>): Record<string, unknown> {
  return terminalSafe(object, 0) as Record<string, unknown>;
}

function terminalSafe(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return oneLine(value);
  if (depth > 8 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((item) => terminalSafe(item, depth + 1));
  const fields = Object.fromEntries(
    Object.entries(value).map(([key, item]) => [key, terminalSafe(item, depth + 1)]),
  );
  if (!(value instanceof Error)) return fields;
  // Its stack keeps its lines; what pino's error serializer would have taken, in the same shape.
  return {
    type: value.name,
    message: oneLine(value.message),
    stack: terminalText(value.stack ?? ''),
    ...fields,
  };
}

/** A logger that drops everything: for tests that do not look at logs. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

/** LOG_LEVEL, and LOG_FORMAT when set (else the logger decides from stderr being a terminal). */
export function loggerOptions(config: {
  logLevel: string;
  logFormat: 'json' | 'pretty' | undefined;
}): LoggerOptions {
  return {
    level: config.logLevel,
    ...(config.logFormat === undefined ? {} : { pretty: config.logFormat === 'pretty' }),
  };
}
