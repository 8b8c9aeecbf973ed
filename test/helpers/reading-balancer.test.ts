import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { deployFor, startReadingBalancer } from './reading-balancer.js';

/** A server answering every request with `[name, name]`. */
async function named(name: string): Promise<{ url: string; close: () => Promise<void> }> {
  const server = http.createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify([name, name]));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('the reading balancer: a deploy seen through a load balancer', () => {
  it('sends window requests to the old deploy before the switch, the new one after the stretch, either in it', () => {
    const tosses: boolean[] = [true, false, false];
    const coin = () => tosses.shift() ?? true;
    const plan = { switchAt: 2, steadyAt: 5, seed: 1 };
    const sides = [0, 1, 2, 3, 4, 5, 6].map((n) => deployFor(n, plan, coin));
    expect(sides).toEqual(['old', 'old', 'old', 'new', 'new', 'new', 'new']);
    expect(tosses).toEqual([]);
  });

  it('a plain deploy tosses no coin: the switch is at one request', () => {
    const coin = () => {
      throw new Error('no coin in a plain deploy');
    };
    const plan = { switchAt: 3, steadyAt: 3, seed: 1 };
    expect([2, 3].map((n) => deployFor(n, plan, coin))).toEqual(['old', 'new']);
  });

  it('forwards over HTTP, counting window requests only, and records what each answered', async () => {
    const [old, deployed] = await Promise.all([named('old'), named('new')]);
    const balancer = await startReadingBalancer(
      { old: old.url, new: deployed.url },
      { switchAt: 1, steadyAt: 1, seed: 7 },
    );
    try {
      const ask = async (path: string) => (await fetch(`${balancer.url}${path}`)).json();
      expect(await ask('/v1/feedback?startdate=2026-01-01&enddate=2026-01-02&limit=10')).toEqual([
        'old',
        'old',
      ]);
      // A snapshot request goes where the next window request would, and is not counted.
      expect(await ask('/v1/heatmaps')).toEqual(['new', 'new']);
      expect(await ask('/v1/survey?startdate=2026-01-01&enddate=2026-01-02&limit=10')).toEqual([
        'new',
        'new',
      ]);
      expect(balancer.routed().map((r) => [r.n, r.deploy, r.status, r.served])).toEqual([
        [0, 'old', 200, 2],
        [1, 'new', 200, 2],
      ]);
    } finally {
      await balancer.close();
      await Promise.all([old.close(), deployed.close()]);
    }
  });
});
