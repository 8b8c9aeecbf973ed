/**
 * A request URL as it may appear in a log line: the token never does. The path of a webhook
 * address keeps its source only when it is a configured one (a token pasted in the wrong place
 * must not leak either); any other path keeps its first segment only; query strings are dropped.
 *
 *   /webhooks/shop/s3cr3t...   -> /webhooks/shop/***
 *   /webhooks/s3cr3t...        -> /webhooks/***
 *   /healthz                   -> /healthz
 */
export function maskUrl(url: string, knownSources: ReadonlySet<string>): string {
  const path = url.split(/[?#]/, 1)[0] ?? '';
  if (PUBLIC_PATHS.has(path)) return path;
  const [first, second, ...rest] = path.split('/').slice(1);
  if (first === undefined || first === '') return '/';
  const head = safeSegment(first);
  if (first === 'webhooks' && second !== undefined && knownSources.has(second)) {
    return rest.length > 0 ? `/webhooks/${second}/***` : `/webhooks/${second}`;
  }
  return second === undefined ? `/${head}` : `/${head}/***`;
}

const PUBLIC_PATHS = new Set(['/', '/healthz', '/readyz', '/metrics', '/webhooks']);

/** A first segment is logged as such only when it looks like a route name, not a secret. */
function safeSegment(segment: string): string {
  return /^[a-z][a-z0-9-]{0,19}$/.test(segment) ? segment : '***';
}
