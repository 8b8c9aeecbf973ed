import { BlockList, isIP } from 'node:net';
import * as z from 'zod';
import type { ConfigProblem } from '../errors.js';
import type { SourceConfig } from './source-config.js';

/** Network settings: addresses and CIDR lists (allow-lists, trusted proxies) and webhook tokens. */

/** An IPv4 or IPv6 address, optionally with a prefix length: 10.0.0.0/8, 2001:db8::/32, ::1. */
export function isCidr(value: string): boolean {
  const [address = '', prefix, ...rest] = value.split('/');
  const family = isIP(address);
  if (family === 0 || rest.length > 0) return false;
  if (prefix === undefined) return true;
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
}

export const cidrList = z
  .string()
  .transform((value) =>
    value
      .split(',')
      .map((part) => part.trim())
      .filter((part) => part !== ''),
  )
  .pipe(z.array(z.string().refine(isCidr)).min(1));
export const CIDR_LIST_EXPECTED =
  'a comma-separated list of IP addresses or CIDRs, e.g. 10.0.0.0/8,2001:db8::/32';

/**
 * The broadest CIDR INSIGHTS_TRUSTED_PROXY may name. A trusted proxy's X-Forwarded-For is believed,
 * so a range that holds more than the operator's own networks lets any sender claim any address and
 * pass an allow-list (`0.0.0.0/1,128.0.0.0/1` is the whole internet). /8 is the largest private
 * IPv4 network (10.0.0.0/8); /32 is the usual allocation of a whole IPv6 provider. An IPv4-mapped
 * IPv6 range (::ffff:0:0/96) is held to the IPv4 limit.
 */
const TRUSTED_PROXY_MIN_PREFIX = { ipv4: 8, ipv6: 32 } as const;

/** ::ffff:0:0/96, however an address in it is spelled. */
const IPV4_MAPPED = new BlockList();
IPV4_MAPPED.addSubnet('::ffff:0:0', 96, 'ipv6');

/** Whether an entry isCidr accepted is no broader than TRUSTED_PROXY_MIN_PREFIX. */
export function isNarrowEnoughProxy(entry: string): boolean {
  const [address = '', prefix] = entry.split('/');
  if (prefix === undefined) return true;
  const bits = Number(prefix);
  if (isIP(address) === 4) return bits >= TRUSTED_PROXY_MIN_PREFIX.ipv4;
  if (bits >= 96 && IPV4_MAPPED.check(address, 'ipv6')) return bits - 96 >= TRUSTED_PROXY_MIN_PREFIX.ipv4;
  return bits >= TRUSTED_PROXY_MIN_PREFIX.ipv6;
}

export const trustedProxyList = cidrList.pipe(z.array(z.string().refine(isNarrowEnoughProxy)));
export const TRUSTED_PROXY_EXPECTED = `a comma-separated list of the reverse proxies' IP addresses or CIDRs, none broader than /${TRUSTED_PROXY_MIN_PREFIX.ipv4} (IPv4) or /${TRUSTED_PROXY_MIN_PREFIX.ipv6} (IPv6), e.g. 10.0.0.0/8,2001:db8::/32 (their X-Forwarded-For is believed)`;

/**
 * The token is the only credential of a webhook address (spec 6 shows no signing), so it must be
 * unguessable; it sits in the URL path, hence URL-safe characters only.
 */
const webhookTokenSchema = z.string().regex(/^[A-Za-z0-9._~-]{24,256}$/);
export const WEBHOOK_TOKEN_EXPECTED =
  'a webhook token of 24-256 URL-safe characters (letters, digits, - _ . ~), e.g. from `openssl rand -hex 24`';

/** The optional webhook token and allow-list of one source; an empty value counts as unset. */
export function webhookSettings(
  token: { variable: string; value: string | undefined },
  allowedIps: { variable: string; value: string | readonly string[] | undefined },
  problems: ConfigProblem[],
): Pick<SourceConfig, 'webhookToken' | 'allowedIps'> {
  const settings: Pick<SourceConfig, 'webhookToken' | 'allowedIps'> = {};
  if (token.value !== undefined && token.value !== '') {
    if (webhookTokenSchema.safeParse(token.value).success) settings.webhookToken = token.value;
    else problems.push({ variable: token.variable, expected: WEBHOOK_TOKEN_EXPECTED });
  }
  if (typeof allowedIps.value === 'string' && allowedIps.value !== '') {
    const parsed = cidrList.safeParse(allowedIps.value);
    if (parsed.success) settings.allowedIps = parsed.data;
    else problems.push({ variable: allowedIps.variable, expected: CIDR_LIST_EXPECTED });
  } else if (Array.isArray(allowedIps.value)) {
    settings.allowedIps = [...allowedIps.value];
  }
  return settings;
}
