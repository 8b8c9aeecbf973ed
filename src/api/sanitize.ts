/**
 * Turning foreign text (fetch errors, response bodies) into short strings that are safe to put in
 * an error or a log line. undici errors can reference the request, headers included, so we keep
 * only messages and codes; and since a misbehaving server or a header validator may echo the key,
 * every string is also scrubbed of it.
 */

const REDACTED = '[redacted]';

export function scrubSecret(text: string, secret: string): string {
  // An empty secret would match between every character.
  const scrubbed = secret === '' ? text : text.split(secret).join(REDACTED);
  return scrubUrlCredentials(scrubbed);
}

/**
 * `scheme://user:password@host` -> `scheme://[redacted]@host` in any text: fetch quotes the URL
 * it refuses ("Request cannot be constructed from a URL that includes credentials: ...").
 */
export function scrubUrlCredentials(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@]*@/gi, `$1${REDACTED}@`);
}

/**
 * What is wrong with a source's base URL, in words that never quote it (it may hold a password),
 * or undefined when requests can be built on it. The config refuses the same URLs; this is the
 * client's own guard for callers that bypass the config.
 */
export function baseUrlProblem(baseUrl: string): string | undefined {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    return 'is not a valid URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'is not an http(s) URL';
  if (url.username !== '' || url.password !== '')
    return 'holds credentials (user:password@); the API key goes in the Authorization header';
  if (url.search !== '' || url.hash !== '') return 'has a query string or a fragment';
  if (/\/v1\/*$/i.test(url.pathname)) return 'ends in /v1, which the client adds to every path itself';
  return undefined;
}

/** The first characters of a body, on one line, printable ASCII only, for "response is not JSON". */
export function bodySnippet(body: string, secret: string, maxLength = 60): string {
  // Scrubbed before and after flattening, so a key split or joined by whitespace is caught too.
  const oneLine = scrubSecret(
    scrubSecret(body, secret)
      .replace(/[^\x20-\x7e]+/g, ' ')
      .replace(/\s+/g, ' ')
      .trim(),
    secret,
  );
  return oneLine.length > maxLength ? `${oneLine.slice(0, maxLength)}...` : oneLine;
}

/**
 * A network failure reduced to message and code. It is the `cause` we attach instead of the
 * original error, which may hold the request and its Authorization header.
 */
export class NetworkError extends Error {
  readonly code: string | undefined;

  constructor(message: string, code?: string) {
    super(message);
    this.name = 'NetworkError';
    this.code = code;
  }
}

/** fetch wraps the interesting part: TypeError('fetch failed') -> Error('connect ECONNREFUSED ...'). */
export function toNetworkError(error: unknown, secret: string): NetworkError {
  const messages: string[] = [];
  let code: string | undefined;
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current instanceof Error; depth++) {
    if (current.message && !messages.includes(current.message)) messages.push(current.message);
    const candidate = (current as { code?: unknown }).code;
    if (typeof candidate === 'string') code = candidate;
    current = current.cause;
  }
  const message = scrubSecret(messages.join(': ') || 'unknown network failure', secret).slice(0, 200);
  return new NetworkError(message, code);
}
