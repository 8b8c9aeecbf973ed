/** Cancellation of API calls (shutdown): one error type, and a sleep that a signal interrupts. */

/** Thrown when the caller's signal aborts a request or a backoff sleep. Never retried. */
export class RequestAbortedError extends Error {
  override readonly name = 'AbortError';

  constructor(what: string, signal: AbortSignal | undefined) {
    // The reason is whatever the caller passed to abort(): theirs, never a request of ours.
    super(`${what} aborted`, { cause: signal?.reason });
  }
}

export function throwIfAborted(signal: AbortSignal | undefined, what: string): void {
  if (signal?.aborted) throw new RequestAbortedError(what, signal);
}

/**
 * A signal of one request's or sleep's own that aborts with `signal`, for its listeners to go on.
 * The caller's signal is one run's shutdown, shared by every request of every source at once:
 * a listener per request on it passes Node's limit of 10 (MaxListenersExceededWarning on Node 20,
 * a line on stderr outside the log format). AbortSignal.any follows its sources without a
 * listener on them, and the signal it returns is dropped with the request.
 */
export function ownSignal(signal: AbortSignal, ...more: AbortSignal[]): AbortSignal {
  return AbortSignal.any([signal, ...more]);
}

export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

/** setTimeout as a promise; rejects with RequestAbortedError as soon as `signal` aborts. */
export const abortableSleep: Sleep = (ms, signal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) {
      reject(new RequestAbortedError('sleep', signal));
      return;
    }
    const own = signal === undefined ? undefined : ownSignal(signal);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(new RequestAbortedError('sleep', signal));
    };
    const timer = setTimeout(() => {
      own?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    own?.addEventListener('abort', onAbort, { once: true });
  });
