/**
 * The client of one source's Website Insights read API (spec 4): the eight GET endpoints, each
 * returning the response array as unknown JSON. Validation of the items happens in `schemas`.
 */
import type { Logger } from '../log/logger.js';
import type { WindowedResource } from '../schemas/resources.js';
import type { TestKind } from '../schemas/test.js';
import { abortableSleep, type Sleep } from './abort.js';
import { getWithRetry, type Pace, type RequestTarget, type RetryingTransport } from './request-with-retry.js';
import { type RetryOptions, resolveRetryOptions } from './retry-policy.js';
import { baseUrlProblem } from './sanitize.js';

export type { Pace } from './request-with-retry.js';
export type { RetryOptions } from './retry-policy.js';

export interface SourceConnection {
  name: string;
  baseUrl: string;
  /** Sent raw in the Authorization header (spec 5); never in a URL, an error or a log line. */
  apiKey: string;
}

export interface ApiClientOptions {
  source: SourceConnection;
  /** Per attempt, covering headers and body; default 30 s. */
  timeoutMs?: number;
  retry?: Partial<RetryOptions>;
  fetch?: typeof globalThis.fetch;
  sleep?: Sleep;
  /** Jitter source, [0, 1). */
  random?: () => number;
  /** Epoch milliseconds, for Retry-After given as an HTTP-date. */
  now?: () => number;
  logger?: Logger;
  /** Cancels everything: the request in flight and any backoff sleep. */
  signal?: AbortSignal;
  /** Called once per HTTP attempt with its status, or null when no response came (network error, timeout). */
  onResponse?: (status: number | null) => void;
  /** The source's request budget, waited for before every attempt; unset: none. */
  pace?: Pace;
}

export interface WindowQuery {
  /** `YYYY-MM-DD`, or an instant `YYYY-MM-DDThh:mm:ss.sssZ` for a time slice (extract/time-slices.ts). */
  startdate: string;
  /** Same as startdate. */
  enddate: string;
  limit: number;
}

export interface ApiClient {
  /** Source name. */
  readonly source: string;
  /** Base URL without a trailing slash (a placeholder when the URL is unusable: it is never quoted). */
  readonly baseUrl: string;
  listTests(kind: TestKind): Promise<unknown[]>;
  testResults(kind: TestKind, id: string): Promise<unknown[]>;
  window(resource: WindowedResource, query: WindowQuery, context?: { day?: string }): Promise<unknown[]>;
  heatmaps(): Promise<unknown[]>;
  /** How many HTTP requests this client has sent (attempts included). */
  requestCount(): number;
}

const DEFAULT_TIMEOUT_MS = 30_000;

export function createApiClient(options: ApiClientOptions): ApiClient {
  const problem = baseUrlProblem(options.source.baseUrl);
  // A URL we refuse is never quoted: it may hold a password (user:password@host).
  const baseUrl = problem === undefined ? options.source.baseUrl.replace(/\/+$/, '') : '[unusable base URL]';
  let requests = 0;
  const fetchOnce: typeof globalThis.fetch =
    options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const onResponse = options.onResponse;
  const transport: RetryingTransport = {
    sourceName: options.source.name,
    baseUrl,
    baseUrlProblem: problem,
    apiKey: options.source.apiKey,
    timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    retry: resolveRetryOptions(options.retry),
    // Looked up per call (not captured now) and called as a plain function, not as a method.
    fetch:
      onResponse === undefined
        ? fetchOnce
        : (input, init) =>
            fetchOnce(input, init).then(
              (response) => {
                onResponse(response.status);
                return response;
              },
              (error: unknown) => {
                onResponse(null);
                throw error;
              },
            ),
    sleep: options.sleep ?? abortableSleep,
    random: options.random ?? Math.random,
    now: options.now ?? Date.now,
    logger: options.logger,
    signal: options.signal,
    onRequest: () => {
      requests++;
    },
    pace: options.pace,
  };
  const get = (target: RequestTarget): Promise<unknown[]> => getWithRetry(target, transport);

  return {
    source: options.source.name,
    baseUrl,
    listTests: (kind) => get({ path: `/v1/${kind}`, resource: kind }),
    testResults: (kind, id) =>
      get({ path: `/v1/${kind}/detail/${encodeURIComponent(id)}`, resource: `${kind}/detail` }),
    window: (resource, query, context) =>
      get({
        path: `/v1/${resource}`,
        query: new URLSearchParams({
          startdate: query.startdate,
          enddate: query.enddate,
          limit: String(query.limit),
        }),
        resource,
        ...(context?.day === undefined ? {} : { day: context.day }),
      }),
    heatmaps: () => get({ path: '/v1/heatmaps', resource: 'heatmaps' }),
    requestCount: () => requests,
  };
}
