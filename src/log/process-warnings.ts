import type { EventEmitter } from 'node:events';
import type { Logger } from 'pino';

/**
 * Node's process warnings (a deprecation, MaxListenersExceededWarning) go through the command's
 * logger instead of Node's own printer, which writes `(node:123) Warning: ...` lines to stderr:
 * in JSON mode such a line is the one a log shipper cannot parse. Node's printer is a listener of
 * the process's `warning` event; it is replaced, and a warning is one `warn` line like any other.
 */
export function logProcessWarnings(logger: Logger, target: EventEmitter = process): void {
  target.removeAllListeners('warning');
  target.on('warning', (warning: Error & { code?: unknown }) => {
    logger.warn(
      { warning: warning.name, ...(typeof warning.code === 'string' ? { code: warning.code } : {}) },
      warning.message,
    );
  });
}
