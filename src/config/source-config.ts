import * as z from 'zod';
import { isHeaderValue } from '../schemas/header-value.js';
import type { PiiMode, PiiPolicy } from '../schemas/pii.js';

/** One source's settings: their shape, and the rules its name, base URL and API key follow wherever they are read from. */

/** One Website Insights account the tool reads from. */
export interface SourceConfig {
  /** Stable name; becomes `source_id` in every table. */
  name: string;
  baseUrl: string;
  /** Never logged, never stored. */
  apiKey: string;
  /** Path secret of the source's webhook address; unset: the source has no webhook endpoint. Never logged. */
  webhookToken?: string;
  /** Webhook deliveries are accepted only from these addresses (IPs or CIDRs); unset: from anywhere. */
  allowedIps?: readonly string[];
  /** Personal data of visitors: hashed or dropped before anything is written. Unset: kept. */
  pii?: PiiPolicy;
  /**
   * Requests per second this source may start, counted across every process (src/sync/request-budget.ts):
   * its `requests_per_second`, else INSIGHTS_SOURCE_RPS. Unset: no budget.
   */
  requestsPerSecond?: number;
  /**
   * How its tests are meant to split their traffic (the file's expected_allocation): a default
   * and per test. The sample-ratio-mismatch check runs only for tests with a declared split.
   */
  expectedAllocation?: ExpectedAllocation;
}

/** A test's declared split: 'equal' among its current variants, or a weight per variant label. */
export type DeclaredSplit = 'equal' | Readonly<Record<string, number>>;

export interface ExpectedAllocation {
  /** Every test of the source without a split of its own. */
  default?: DeclaredSplit;
  /** By test id. */
  tests?: Readonly<Record<string, DeclaredSplit>>;
}

export const RESERVED_SOURCE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;

/**
 * What a base URL must be, when it is not: an http(s) URL without credentials (a password in a
 * URL ends up in logs and errors; the key goes in INSIGHTS_API_KEY), without a query or fragment
 * (paths are appended to it), and without the `/v1` the client adds to every path itself (it
 * would ask /v1/v1/... and get a bare 404). Never quotes the value: it may hold a password.
 */
export function baseUrlExpected(value: string): string | undefined {
  const example = 'e.g. https://api.example.com';
  if (!z.url({ protocol: /^https?$/ }).safeParse(value).success) return `an http(s) URL, ${example}`;
  const url = new URL(value);
  if (url.username !== '' || url.password !== '')
    return `a URL without credentials (user:password@ is refused; the API key goes in INSIGHTS_API_KEY or api_key_env), ${example}`;
  if (url.search !== '' || url.hash !== '') return `a URL without a query string or fragment, ${example}`;
  if (/\/v1\/*$/i.test(url.pathname))
    return `the base URL without the trailing /v1 (the tool adds /v1/<endpoint> itself), ${example}`;
  return undefined;
}

/**
 * The key is sent as the Authorization header (spec 5): an empty one, or one a header cannot
 * hold, is found here rather than after the run has started.
 */
export function isApiKeyValue(value: string): boolean {
  return value.length > 0 && isHeaderValue(value);
}
export const API_KEY_CHARACTERS =
  'the API key of the source, without line breaks, NUL or characters beyond Latin-1 (it is sent as a header)';

/** What readSources knows of a source's pii setting before the key is attached. */
export type SourceDraft = Omit<SourceConfig, 'pii'> & { piiMode?: PiiMode };

/** A source's own requests_per_second wins over INSIGHTS_SOURCE_RPS, 0 included (no budget for it). */
export function withBudget(draft: SourceDraft, globalRps: number): SourceDraft {
  const { requestsPerSecond, ...source } = draft;
  const rps = requestsPerSecond ?? globalRps;
  return rps > 0 ? { ...source, requestsPerSecond: rps } : source;
}
