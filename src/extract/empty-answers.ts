/**
 * No empty snapshot answer is trusted alone. A `200 []` from a test list, the heatmap list or a
 * test's results looks exactly like a transient glitch of the service (a cache miss, a replica
 * that is behind), so it is asked again, with backoff, before it is believed:
 *  - a list (tests, heatmaps) empty on every ask is taken as true: a source may have none;
 *  - a test's results empty on every ask is never taken as true: every test has at least one
 *    variant (spec: "one item per variant", a control among them), so that detail counts as
 *    unread (EmptyAnswerError), and its stored rows are kept as they are.
 * An empty answer is treated like a failed attempt of a request: asked as many times in all as a
 * request is tried (maxAttempts, default 5), with the request retry's backoff base and cap
 * (retryBaseMs doubling per re-ask, at most retryMaxMs). The run summary counts the re-asks.
 */
import { type Sleep, throwIfAborted } from '../api/abort.js';
import { InsightsError } from '../errors.js';

export interface EmptyReaskPolicy {
  /** Asks in all, the first included (at least 1). */
  asks: number;
  /** Wait before the first re-ask; doubles with each further one. */
  baseDelayMs: number;
  /** Cap of one wait. */
  maxDelayMs: number;
}

/** From the request retry settings: an empty answer gets the chances a failed request gets. */
export function emptyReaskPolicy(settings: {
  maxAttempts: number;
  retryBaseMs: number;
  retryMaxMs: number;
}): EmptyReaskPolicy {
  return {
    asks: Math.max(1, Math.floor(settings.maxAttempts)),
    baseDelayMs: Math.max(0, settings.retryBaseMs),
    maxDelayMs: Math.max(0, settings.retryMaxMs),
  };
}

export type EmptyStep = { action: 'accept' } | { action: 'reask'; delayMs: number };

/**
 * What to do after the `asked`-th answer (1-based) held `items` items: accept it, or ask again
 * after a wait. Pure; the driver is readNotEmpty.
 */
export function afterAnswer(asked: number, items: number, policy: EmptyReaskPolicy): EmptyStep {
  if (items > 0 || asked >= policy.asks) return { action: 'accept' };
  const delayMs = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (asked - 1));
  return { action: 'reask', delayMs };
}

/** A test's results were empty on every ask: not believed (a test has at least one variant). */
export class EmptyAnswerError extends InsightsError {
  /** Asks after the first: re-asks the run made, and counts, though none was answered. */
  readonly reasked: number;

  constructor(what: string, asks: number) {
    super(`${what} answered an empty list on all ${asks} asks; a test has at least one variant`);
    this.reasked = asks - 1;
  }
}

export interface NotEmptyRead {
  items: unknown[];
  /** Asks after the first, because an answer was empty. */
  reasked: number;
  /** Items received over all asks (the last answer's, since the earlier ones were empty). */
  fetched: number;
}

/**
 * Reads until the answer is not empty or the policy's asks run out. `emptyIsTrue` false (a
 * test's results): running out throws EmptyAnswerError instead of returning the empty answer.
 */
export async function readNotEmpty(
  read: () => Promise<unknown[]>,
  options: {
    policy: EmptyReaskPolicy;
    sleep: Sleep;
    signal?: AbortSignal;
    emptyIsTrue: boolean;
    what: string;
  },
): Promise<NotEmptyRead> {
  for (let asked = 1; ; asked++) {
    const items = await read();
    const step = afterAnswer(asked, items.length, options.policy);
    if (step.action === 'accept') {
      if (items.length === 0 && !options.emptyIsTrue) throw new EmptyAnswerError(options.what, asked);
      return { items, reasked: asked - 1, fetched: items.length };
    }
    if (step.delayMs > 0) await options.sleep(step.delayMs, options.signal);
    throwIfAborted(options.signal, options.what);
  }
}

/** The policy under the default request retry settings (5 tries, 500 ms base, 30 s cap). */
export const DEFAULT_EMPTY_REASK: Readonly<EmptyReaskPolicy> = Object.freeze(
  emptyReaskPolicy({ maxAttempts: 5, retryBaseMs: 500, retryMaxMs: 30_000 }),
);
