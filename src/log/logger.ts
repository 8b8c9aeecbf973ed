import { type Logger, pino } from 'pino';

export type { Logger } from 'pino';

/**
 * Paths that may hold a secret. pino removes them before a line is written, so a key that slips
 * into a log call never reaches stdout or a file.
 */
export const REDACTED_PATHS = [
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
  /** Human-friendly lines; the default is pretty only when stdout is a terminal. */
  pretty?: boolean;
  destination?: NodeJS.WritableStream;
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const pretty = options.pretty ?? (Boolean(process.stdout.isTTY) && !process.env.CI);
  const base = {
    level: options.level ?? process.env.LOG_LEVEL ?? 'info',
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    base: undefined,
  };
  if (options.destination) return pino(base, options.destination as pino.DestinationStream);
  if (pretty) {
    return pino({
      ...base,
      transport: { target: 'pino-pretty', options: { colorize: true, destination: 2 } },
    });
  }
  // Logs go to stderr so stdout stays clean for command output (status --json, tables).
  return pino(base, pino.destination(2));
}

/** A logger that drops everything: for tests that do not look at logs. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
