/**
 * One GET attempt against the source API with a deadline covering headers and body. It never
 * throws for what the server did (that is an AttemptOutcome for the retry loop to judge); it
 * throws only when the caller's signal aborts.
 */
import { ownSignal, RequestAbortedError } from './abort.js';
import { cutDeepNesting } from './nesting-bound.js';
import { bodySnippet, NetworkError, toNetworkError } from './sanitize.js';

export type AttemptOutcome =
  | { kind: 'ok'; items: unknown[] }
  | { kind: 'http'; status: number; retryAfter: string | null }
  | { kind: 'network'; error: NetworkError }
  | { kind: 'bad-body'; problem: string };

export interface AttemptRequest {
  url: string;
  /** Path and query, for messages. */
  label: string;
  apiKey: string;
  timeoutMs: number;
  fetch: typeof globalThis.fetch;
  signal?: AbortSignal;
}

export async function getJsonArray(request: AttemptRequest): Promise<AttemptOutcome> {
  const { signal, apiKey } = request;
  if (signal?.aborted) throw new RequestAbortedError(`GET ${request.label}`, signal);

  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, request.timeoutMs);
  // Not a listener on `signal`: it is shared by every request in flight (ownSignal).
  const requestSignal = signal === undefined ? controller.signal : ownSignal(signal, controller.signal);

  try {
    const response = await request.fetch(request.url, {
      method: 'GET',
      headers: { Authorization: apiKey, Accept: 'application/json' },
      // A redirect could carry the key to another host; the API documents none, so we stop.
      redirect: 'manual',
      signal: requestSignal,
    });
    if (response.status < 200 || response.status > 299) {
      // Release the connection without waiting for a body we do not use.
      await response.body?.cancel().catch(() => undefined);
      return { kind: 'http', status: response.status, retryAfter: response.headers.get('retry-after') };
    }
    // Still inside the deadline: a body that stalls halfway is cut like a stalled header.
    return parseArray(await response.text(), apiKey);
  } catch (error) {
    if (signal?.aborted) throw new RequestAbortedError(`GET ${request.label}`, signal);
    if (timedOut) {
      return {
        kind: 'network',
        error: new NetworkError(`timeout: no complete response within ${request.timeoutMs} ms`, 'ETIMEDOUT'),
      };
    }
    return { kind: 'network', error: toNetworkError(error, apiKey) };
  } finally {
    clearTimeout(timer);
  }
}

function parseArray(text: string, apiKey: string): AttemptOutcome {
  if (text.trim() === '') return { kind: 'bad-body', problem: 'response is not JSON (empty body)' };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    // Broken JSON is the service's data cut short: its first characters may be a visitor's name
    // or e-mail, and this message reaches logs and the ledger. An error page is quoted, data not.
    if (/^\s*[[{]/.test(text))
      return {
        kind: 'bad-body',
        problem: `response is not JSON (malformed JSON, ${text.length} characters)`,
      };
    const snippet = bodySnippet(text, apiKey);
    return { kind: 'bad-body', problem: `response is not JSON (body starts with "${snippet}")` };
  }
  if (!Array.isArray(json)) {
    return { kind: 'bad-body', problem: `expected a JSON array, got ${jsonType(json)}` };
  }
  // Before anything recurses into the items (sizing, identity, validation).
  cutDeepNesting(json);
  return { kind: 'ok', items: json };
}

function jsonType(value: unknown): string {
  if (value === null) return 'null';
  return typeof value;
}
