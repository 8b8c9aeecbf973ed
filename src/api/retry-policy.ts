/**
 * Which failures of the source API are worth another attempt, and how long to wait before it.
 * Pure functions: the clock and the random source are passed in.
 */

export interface RetryOptions {
  /** Total attempts including the first. */
  maxAttempts: number;
  /** First backoff ceiling; it doubles with every failed attempt. */
  baseDelayMs: number;
  /** Cap of one backoff sleep. */
  maxDelayMs: number;
  /** A Retry-After longer than this is clamped to it, so one bad header cannot stall a run for hours. */
  retryAfterCapMs: number;
}

export const DEFAULT_RETRY_OPTIONS: Readonly<RetryOptions> = Object.freeze({
  // Five attempts with a 500 ms base spread over ~7.5 s at most (without Retry-After): enough to
  // ride out a deploy or a proxy hiccup, short enough that a dead source fails within a run.
  maxAttempts: 5,
  baseDelayMs: 500,
  maxDelayMs: 30_000,
  retryAfterCapMs: 60_000,
});

export function resolveRetryOptions(partial: Partial<RetryOptions> = {}): RetryOptions {
  const merged = { ...DEFAULT_RETRY_OPTIONS, ...partial };
  return {
    maxAttempts: Math.max(1, Math.floor(merged.maxAttempts)),
    baseDelayMs: Math.max(0, merged.baseDelayMs),
    maxDelayMs: Math.max(0, merged.maxDelayMs),
    retryAfterCapMs: Math.max(0, merged.retryAfterCapMs),
  };
}

/** What one attempt produced, as far as the retry decision cares. */
export type FailureKind =
  | { kind: 'http'; status: number }
  /** Connection refused/reset, socket closed mid-body, timeout. */
  | { kind: 'network' }
  /** A 2xx whose body is not a JSON array: possibly a transient proxy page. */
  | { kind: 'bad-body' };

/**
 * retry: transient, worth another attempt. auth: the key is rejected (stop the source).
 * refused: this endpoint is closed to this key or absent (stop this resource only).
 * fatal: permanent for this request (asking again gets the same answer).
 */
export type Verdict = 'retry' | 'auth' | 'refused' | 'fatal';

/**
 * The table. Only a 401 says the key itself is wrong (spec 5 and 7 leave the codes open; a 403
 * can be a key scoped to some resources, and a 404 an endpoint this server lacks). Other client
 * errors (400, 405, 410, 422, a redirect we do not follow) are permanent; 408, 425, 429 and most
 * 5xx are transient. 501, 505 and 511 say the server (or a captive proxy) will not serve this
 * request at all, so they are permanent too.
 */
const PERMANENT_5XX = new Set([501, 505, 511]);
const TRANSIENT_4XX = new Set([408, 425, 429]);

export function classifyFailure(failure: FailureKind): Verdict {
  if (failure.kind !== 'http') return 'retry';
  const { status } = failure;
  if (status === 401) return 'auth';
  if (status === 403 || status === 404) return 'refused';
  if (TRANSIENT_4XX.has(status)) return 'retry';
  if (status >= 500 && !PERMANENT_5XX.has(status)) return 'retry';
  return 'fatal';
}

/** Statuses whose Retry-After header we honour (RFC 9110 defines it for 503, RFC 6585 for 429). */
export function honoursRetryAfter(status: number): boolean {
  return status === 429 || status === 503;
}

/**
 * Retry-After as milliseconds from now: either delay-seconds (`120`) or an HTTP-date
 * (`Wed, 21 Oct 2015 07:28:00 GMT`). A date in the past means 0; anything unparsable is ignored.
 */
export function parseRetryAfter(value: string | null | undefined, now: number): number | undefined {
  if (value == null) return undefined;
  const trimmed = value.trim();
  if (trimmed === '') return undefined;
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  // Date.parse alone accepts almost anything ("1.5" is a date in 2001): every HTTP-date form
  // (IMF-fixdate, RFC 850, asctime) starts with a day name, and all of them are in GMT.
  if (!/^(mon|tue|wed|thu|fri|sat|sun)/i.test(trimmed)) return undefined;
  const at = Date.parse(/gmt$/i.test(trimmed) ? trimmed : `${trimmed} GMT`);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}

/** Exponential backoff with full jitter: a random point in [0, min(cap, base * 2^(attempt-1))). */
export function backoffDelay(attempt: number, options: RetryOptions, random: () => number): number {
  const ceiling = Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** (attempt - 1));
  const r = Math.min(1, Math.max(0, random()));
  return Math.floor(r * ceiling);
}

/**
 * How long to wait after failed attempt number `attempt` (1-based). A Retry-After is a floor,
 * clamped to `retryAfterCapMs`; the jittered backoff still applies when it is longer.
 */
export function retryDelay(
  attempt: number,
  options: RetryOptions,
  random: () => number,
  retryAfterMs?: number,
): number {
  const backoff = backoffDelay(attempt, options, random);
  if (retryAfterMs === undefined) return backoff;
  return Math.max(Math.min(retryAfterMs, options.retryAfterCapMs), backoff);
}
