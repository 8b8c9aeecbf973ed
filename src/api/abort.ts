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

export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

/** setTimeout as a promise; rejects with RequestAbortedError as soon as `signal` aborts. */
export const abortableSleep: Sleep = (ms, signal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) {
      reject(new RequestAbortedError('sleep', signal));
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(new RequestAbortedError('sleep', signal));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
