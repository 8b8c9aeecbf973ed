/**
 * How many of the receiver's sockets one client may hold, decided without I/O: one peer address
 * at most `perAddress`, and all the addresses of one network (an IPv4 /24, an IPv6 /64: what one
 * host or one customer is usually given) at most `perSubnet` together. A cap per address alone let
 * 22 addresses of one network, 50 sockets each, take every socket from the other senders.
 */

export interface ConnectionShares {
  perAddress: number;
  perSubnet: number;
}

export type ConnectionVerdict = { admit: true } | { admit: false; full: 'address' | 'subnet' };

/** Sockets open now, per address and per network. */
export class OpenConnections {
  private readonly byAddress = new Map<string, number>();
  private readonly bySubnet = new Map<string, number>();

  constructor(private readonly shares: ConnectionShares) {}

  /** Counts the socket in when its address and its network have room; else refuses it, counting nothing. */
  admit(remoteAddress: string): ConnectionVerdict {
    const address = peerAddress(remoteAddress);
    const subnet = subnetOf(address);
    if ((this.byAddress.get(address) ?? 0) >= this.shares.perAddress)
      return { admit: false, full: 'address' };
    if ((this.bySubnet.get(subnet) ?? 0) >= this.shares.perSubnet) return { admit: false, full: 'subnet' };
    increment(this.byAddress, address, 1);
    increment(this.bySubnet, subnet, 1);
    return { admit: true };
  }

  /** A socket admit() counted in has closed. */
  release(remoteAddress: string): void {
    const address = peerAddress(remoteAddress);
    increment(this.byAddress, address, -1);
    increment(this.bySubnet, subnetOf(address), -1);
  }

  /** Sockets counted for the address and for its network (for tests). */
  held(remoteAddress: string): { address: number; subnet: number } {
    const address = peerAddress(remoteAddress);
    return { address: this.byAddress.get(address) ?? 0, subnet: this.bySubnet.get(subnetOf(address)) ?? 0 };
  }
}

function increment(counts: Map<string, number>, key: string, by: number): void {
  const next = (counts.get(key) ?? 0) + by;
  if (next <= 0) counts.delete(key);
  else counts.set(key, next);
}

const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

/**
 * The address as one client: an IPv4 peer of a dual-stack listener is `::ffff:a.b.c.d`, the same
 * client as `a.b.c.d`; an IPv6 zone (`%eth0`) names an interface, not a client.
 */
export function peerAddress(remoteAddress: string): string {
  const bare = remoteAddress.split('%')[0] ?? '';
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(bare);
  return (mapped?.[1] ?? bare).toLowerCase();
}

/**
 * The network an address counts in: `a.b.c.0/24` for IPv4, the first four groups and `::/64`
 * for IPv6 (`2001:db8:0:1::/64`). Anything else (no address at all) is a network of its own.
 */
export function subnetOf(remoteAddress: string): string {
  const address = peerAddress(remoteAddress);
  const v4 = IPV4.exec(address);
  if (v4 !== null) return `${v4[1]}.${v4[2]}.${v4[3]}.0/24`;
  const groups = ipv6Groups(address);
  if (groups === undefined) return address;
  return `${groups.slice(0, 4).join(':')}::/64`;
}

/** The eight groups of an IPv6 address, each without leading zeros; undefined if it is not one. */
function ipv6Groups(address: string): string[] | undefined {
  if (!address.includes(':')) return undefined;
  // An IPv4 tail (::ffff:1.2.3.4 with another prefix, 64:ff9b::1.2.3.4) is two groups.
  const tail = /^(.*:)(\d{1,3}(?:\.\d{1,3}){3})$/.exec(address);
  let text = address;
  if (tail !== null) {
    const octets = (tail[2] ?? '').split('.').map(Number);
    const [a = 0, b = 0, c = 0, d = 0] = octets;
    text = `${tail[1]}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const split = (half: string | undefined) => (half === undefined || half === '' ? [] : half.split(':'));
  const head = split(halves[0]);
  const rest = split(halves[1]);
  const missing = 8 - head.length - rest.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  const groups = [...head, ...Array.from({ length: halves.length === 2 ? missing : 0 }, () => '0'), ...rest];
  if (!groups.every((group) => /^[0-9a-f]{1,4}$/.test(group))) return undefined;
  return groups.map((group) => Number.parseInt(group, 16).toString(16));
}
