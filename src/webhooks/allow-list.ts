import { BlockList, isIPv4 } from 'node:net';

/** Whether a client address may deliver to a source: its configured IPs and CIDRs, nothing else. */
export type AllowList = (address: string) => boolean;

/** Builds the check from entries loadConfig validated (isCidr): `10.0.0.0/8`, `::1`, `2001:db8::/32`. */
export function createAllowList(entries: readonly string[]): AllowList {
  const list = new BlockList();
  for (const entry of entries) {
    const [address = '', prefix] = entry.split('/');
    const type = isIPv4(address) ? 'ipv4' : 'ipv6';
    if (prefix === undefined) list.addAddress(address, type);
    else list.addSubnet(address, Number(prefix), type);
  }
  return (address) => {
    const plain = unmapped(address);
    return list.check(plain, isIPv4(plain) ? 'ipv4' : 'ipv6');
  };
}

/** A server listening on `::` sees IPv4 clients as ::ffff:a.b.c.d; the list speaks plain IPv4. */
function unmapped(address: string): string {
  const tail = address.startsWith('::ffff:') ? address.slice('::ffff:'.length) : undefined;
  return tail !== undefined && isIPv4(tail) ? tail : address;
}
