import { describe, expect, it } from 'vitest';
import { OpenConnections, peerAddress, subnetOf } from '../../src/webhooks/connection-shares.js';

describe('the network an address counts in', () => {
  it('is the /24 of an IPv4 address, also when a dual-stack listener sees it as ::ffff:a.b.c.d', () => {
    expect(subnetOf('203.0.113.7')).toBe('203.0.113.0/24');
    expect(subnetOf('::ffff:203.0.113.200')).toBe('203.0.113.0/24');
    expect(subnetOf('::FFFF:203.0.113.200')).toBe('203.0.113.0/24');
    expect(subnetOf('203.0.114.7')).toBe('203.0.114.0/24');
    expect(peerAddress('::ffff:127.0.0.2')).toBe('127.0.0.2');
  });

  it('is the /64 of an IPv6 address, however it is written', () => {
    expect(subnetOf('2001:db8:0:1::5')).toBe('2001:db8:0:1::/64');
    expect(subnetOf('2001:0db8:0000:0001:ffff:0:0:9')).toBe('2001:db8:0:1::/64');
    expect(subnetOf('2001:DB8:0:1:a:b:c:d')).toBe('2001:db8:0:1::/64');
    expect(subnetOf('2001:db8:0:2::5')).toBe('2001:db8:0:2::/64');
    expect(subnetOf('::1')).toBe('0:0:0:0::/64');
    expect(subnetOf('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(subnetOf('64:ff9b::192.0.2.1')).toBe('64:ff9b:0:0::/64');
    expect(subnetOf('2001:db8::')).toBe('2001:db8:0:0::/64');
  });

  it('is the text itself for what is not an address (a socket without one): a network of its own', () => {
    expect(subnetOf('')).toBe('');
    expect(subnetOf('1:2:3')).toBe('1:2:3');
    expect(subnetOf('1::2::3')).toBe('1::2::3');
    expect(subnetOf('1:2:3:4:5:6:7:8:9')).toBe('1:2:3:4:5:6:7:8:9');
  });
});

describe('the share of sockets a client may hold', () => {
  it('refuses the socket one address holds beyond its share, and admits it again once one closed', () => {
    const open = new OpenConnections({ perAddress: 2, perSubnet: 10 });
    expect(open.admit('198.51.100.1')).toEqual({ admit: true });
    expect(open.admit('::ffff:198.51.100.1')).toEqual({ admit: true });
    expect(open.admit('198.51.100.1')).toEqual({ admit: false, full: 'address' });
    expect(open.admit('198.51.100.2')).toEqual({ admit: true });
    open.release('198.51.100.1');
    expect(open.admit('198.51.100.1')).toEqual({ admit: true });
  });

  it("refuses the addresses of one /24 beyond the network's share together; another /24 is admitted", () => {
    const open = new OpenConnections({ perAddress: 2, perSubnet: 5 });
    const verdicts = Array.from({ length: 22 }, (_, i) => open.admit(`192.0.2.${i + 1}`).admit);
    expect(verdicts.filter(Boolean)).toHaveLength(5);
    expect(open.admit('192.0.2.200')).toEqual({ admit: false, full: 'subnet' });
    expect(open.admit('192.0.3.1')).toEqual({ admit: true });
    expect(open.held('192.0.2.1')).toEqual({ address: 1, subnet: 5 });
  });

  it('counts the addresses of one IPv6 /64 together', () => {
    const open = new OpenConnections({ perAddress: 50, perSubnet: 3 });
    for (const address of ['2001:db8:0:1::1', '2001:db8:0:1::2', '2001:db8:0:1:abcd:1234:5678:9'])
      expect(open.admit(address)).toEqual({ admit: true });
    expect(open.admit('2001:db8:0:1:ffff::1')).toEqual({ admit: false, full: 'subnet' });
    expect(open.admit('2001:db8:0:2::1')).toEqual({ admit: true });
  });

  it('forgets an address and a network once their last socket closed; a refused socket counted nothing', () => {
    const open = new OpenConnections({ perAddress: 1, perSubnet: 1 });
    expect(open.admit('10.0.0.1').admit).toBe(true);
    expect(open.admit('10.0.0.2').admit).toBe(false);
    open.release('10.0.0.1');
    expect(open.held('10.0.0.1')).toEqual({ address: 0, subnet: 0 });
    expect(open.admit('10.0.0.2').admit).toBe(true);
  });
});
