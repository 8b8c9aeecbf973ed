import type { SourceConfig } from '../config/source-config.js';
import { type AllowList, createAllowList } from './allow-list.js';
import { tokensMatch } from './token.js';

/** A source that receives webhooks: it has a token. */
export interface Endpoint {
  source: SourceConfig;
  token: string;
  allowed: AllowList | undefined;
}

/**
 * Compared against the token of a request for an unknown source, so that such a request costs
 * the time of a real comparison: its answer, and its timing, are those of a wrong token.
 */
const DUMMY_TOKEN = 'no-such-source-0000000000000000';

export type Admission =
  | { admitted: true; endpoint: Endpoint }
  /** 404 for an unknown source and for a wrong token alike; 403 only to a holder of the token. */
  | { admitted: false; status: 404 | 403 };

export function webhookEndpoints(sources: readonly SourceConfig[]): Map<string, Endpoint> {
  const endpoints = new Map<string, Endpoint>();
  for (const source of sources) {
    if (source.webhookToken === undefined) continue;
    endpoints.set(source.name, {
      source,
      token: source.webhookToken,
      allowed: source.allowedIps === undefined ? undefined : createAllowList(source.allowedIps),
    });
  }
  return endpoints;
}

/**
 * Who may deliver to /webhooks/<source>/<token>. An unknown source and a wrong token get the same
 * answer (404 versus 401 told which source names exist), and the token is checked
 * before the sender's address, so a 403 too is only ever seen by someone holding the token.
 */
export function admit(
  endpoints: ReadonlyMap<string, Endpoint>,
  sourceName: string,
  token: string,
  ip: string | undefined,
): Admission {
  const endpoint = endpoints.get(sourceName);
  const matches = tokensMatch(endpoint?.token ?? DUMMY_TOKEN, token);
  if (endpoint === undefined || !matches) return { admitted: false, status: 404 };
  if (endpoint.allowed !== undefined && !isAllowed(endpoint.allowed, ip))
    return { admitted: false, status: 403 };
  return { admitted: true, endpoint };
}

function isAllowed(allowed: AllowList, address: string | undefined): boolean {
  try {
    return address !== undefined && allowed(address);
  } catch {
    return false;
  }
}

/**
 * The charset of a JSON Content-Type: absent or UTF-8 (RFC 8259 allows no other). A body in any
 * other charset would be decoded as UTF-8 all the same, and stored garbled: refused instead.
 */
export function isUtf8ContentType(contentType: string | undefined): boolean {
  if (contentType === undefined) return true;
  for (const parameter of contentType.split(';').slice(1)) {
    const [name, ...value] = parameter.split('=');
    if (name?.trim().toLowerCase() !== 'charset') continue;
    const charset = value
      .join('=')
      .trim()
      .replace(/^"(.*)"$/, '$1')
      .toLowerCase();
    if (charset !== 'utf-8' && charset !== 'utf8') return false;
  }
  return true;
}
