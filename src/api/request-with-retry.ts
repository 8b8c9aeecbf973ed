/**
 * The attempt loop: send, judge the outcome with the retry policy, sleep, try again, and turn the
 * last failure into one typed error carrying the operator's context (never the key).
 */
import { ApiError, AuthError, EndpointRefusedError, type ErrorContext } from '../errors.js';
import type { Logger } from '../log/logger.js';
import { isHeaderValue } from '../schemas/header-value.js';
import { RequestAbortedError, type Sleep, throwIfAborted } from './abort.js';
import { type AttemptOutcome, getJsonArray } from './http-client.js';
import {
  classifyFailure,
  type FailureKind,
  honoursRetryAfter,
  parseRetryAfter,
  type RetryOptions,
  retryDelay,
} from './retry-policy.js';

export interface RequestTarget {
  /** Path under the base URL, e.g. `/v1/feedback`. */
  path: string;
  query?: URLSearchParams;
  /** For error context and logs: `feedback`, `abtesting/detail`, ... */
  resource: string;
  day?: string;
}

/**
 * Waits until the source's request budget lets one more request start (src/sync/request-budget.ts);
 * rejects when `signal` aborts. Called before every attempt: a retry is a request too.
 */
export type Pace = (signal?: AbortSignal) => Promise<void>;

export interface RetryingTransport {
  sourceName: string;
  /** Without a trailing slash. */
  baseUrl: string;
  /** Why no request can be built on baseUrl (then nothing is sent, and baseUrl is never quoted). */
  baseUrlProblem?: string;
  apiKey: string;
  timeoutMs: number;
  retry: RetryOptions;
  fetch: typeof globalThis.fetch;
  sleep: Sleep;
  random: () => number;
  now: () => number;
  logger?: Logger;
  signal?: AbortSignal;
  /** Called once per HTTP request sent. */
  onRequest: () => void;
  /** Unset: the source has no request budget, and nothing is waited for. */
  pace?: Pace;
}

type Failure = Exclude<AttemptOutcome, { kind: 'ok' }>;

export async function getWithRetry(target: RequestTarget, transport: RetryingTransport): Promise<unknown[]> {
  const { retry, signal, apiKey } = transport;
  const search = target.query?.toString() ?? '';
  const url = `${transport.baseUrl}${target.path}${search === '' ? '' : `?${search}`}`;
  const what = `GET ${target.path}`;
  const context = (status?: number): ErrorContext => ({
    source: transport.sourceName,
    resource: target.resource,
    ...(target.day === undefined ? {} : { day: target.day }),
    ...(status === undefined ? {} : { status }),
    ...(transport.baseUrlProblem === undefined ? { url } : {}),
  });

  if (transport.baseUrlProblem !== undefined) {
    // Permanent: the same URL fails the same way on every attempt, so none is made.
    const problem = `the base URL of source ${transport.sourceName} ${transport.baseUrlProblem}`;
    throw new ApiError(`${what} not sent: ${problem}`, context(), { retryable: false });
  }
  if (!isHeaderValue(apiKey)) {
    const problem = 'the API key contains characters not allowed in a header';
    throw new ApiError(`${what} not sent: ${problem}`, context(), { retryable: false });
  }

  for (let attempt = 1; ; attempt++) {
    throwIfAborted(signal, what);
    if (transport.pace !== undefined) {
      try {
        await transport.pace(signal);
      } catch (error) {
        if (signal?.aborted) throw new RequestAbortedError(what, signal);
        throw error;
      }
    }
    transport.onRequest();
    const outcome = await getJsonArray({
      url,
      label: target.path,
      apiKey,
      timeoutMs: transport.timeoutMs,
      fetch: transport.fetch,
      signal,
    });
    if (outcome.kind === 'ok') return outcome.items;

    const status = outcome.kind === 'http' ? outcome.status : undefined;
    const verdict = classifyFailure(failureKind(outcome));
    if (verdict === 'auth') throw new AuthError(transport.baseUrl, transport.sourceName, status ?? 0);
    if (verdict === 'refused')
      throw new EndpointRefusedError(
        target.path,
        transport.sourceName,
        status ?? 0,
        target.resource,
        context(status),
      );

    // Foreign text inside it (fetch messages, body snippets) is already scrubbed of the key.
    const reason = describe(outcome);
    const cause = outcome.kind === 'network' ? outcome.error : undefined;
    if (verdict === 'fatal') {
      const where = attempt === 1 ? 'failed' : `failed on attempt ${attempt}`;
      throw new ApiError(`${what} ${where}: ${reason}`, context(status), { retryable: false, cause });
    }
    if (attempt >= retry.maxAttempts) {
      const attempts = attempt === 1 ? '1 attempt' : `${attempt} attempts`;
      throw new ApiError(`${what} failed after ${attempts}: ${reason}`, context(status), {
        retryable: true,
        cause,
      });
    }

    const retryAfterMs =
      outcome.kind === 'http' && honoursRetryAfter(outcome.status)
        ? parseRetryAfter(outcome.retryAfter, transport.now())
        : undefined;
    const delayMs = retryDelay(attempt, retry, transport.random, retryAfterMs);
    // One blip is routine; a second failure in a row is worth an operator's attention.
    const level = attempt === 1 ? 'debug' : 'warn';
    transport.logger?.[level](
      {
        source: transport.sourceName,
        resource: target.resource,
        day: target.day,
        status,
        attempt,
        delayMs,
        reason,
      },
      `${what} failed (${reason}), retrying in ${delayMs} ms`,
    );
    try {
      await transport.sleep(delayMs, signal);
    } catch (error) {
      if (signal?.aborted) throw new RequestAbortedError(what, signal);
      throw error;
    }
  }
}

function failureKind(outcome: Failure): FailureKind {
  return outcome.kind === 'http' ? { kind: 'http', status: outcome.status } : { kind: outcome.kind };
}

function describe(outcome: Failure): string {
  switch (outcome.kind) {
    case 'http':
      return outcome.status >= 300 && outcome.status < 400
        ? `HTTP ${outcome.status} (redirects are not followed)`
        : `HTTP ${outcome.status}`;
    case 'network': {
      const code = outcome.error.code === undefined ? '' : ` (${outcome.error.code})`;
      return `network error${code}: ${outcome.error.message}`;
    }
    case 'bad-body':
      return outcome.problem;
  }
}
