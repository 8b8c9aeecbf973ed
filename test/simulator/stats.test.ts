import { describe, expect, it } from 'vitest';
import { mostStartsWithin } from '../../src/simulator/stats.js';
import { get, withSimulator } from './sim-helpers.js';

describe('latencyMs and stats()', () => {
  it('delays every response by latencyMs, including a 401', async () => {
    await withSimulator({ latencyMs: 80 }, async (simulator) => {
      let started = Date.now();
      expect((await get(simulator, '/v1/heatmaps')).status).toBe(200);
      expect(Date.now() - started).toBeGreaterThanOrEqual(75);
      started = Date.now();
      expect((await get(simulator, '/v1/heatmaps', { headers: { authorization: 'wrong' } })).status).toBe(
        401,
      );
      expect(Date.now() - started).toBeGreaterThanOrEqual(75);
    });
  });

  it('counts requests in flight at once: maxInFlight shows the concurrency a client used', async () => {
    await withSimulator({ latencyMs: 150 }, async (simulator) => {
      await Promise.all(Array.from({ length: 6 }, () => get(simulator, '/v1/feedback?limit=1')));
      const stats = simulator.stats();
      expect(stats.maxInFlight).toBe(6);
      expect(stats.inFlight).toBe(0);
      expect(stats.requests).toBe(6);
      expect(stats.byPath).toEqual({ '/v1/feedback': 6 });
    });
  });

  it('sums the time requests spent in flight: over a stretch, busyMs / its length is the mean in flight', async () => {
    await withSimulator({ latencyMs: 100 }, async (simulator) => {
      const started = performance.now();
      await Promise.all(Array.from({ length: 4 }, () => get(simulator, '/v1/feedback?limit=1')));
      const wallMs = performance.now() - started;
      const { busyMs } = simulator.stats();
      // Four requests of at least 100 ms each, answered within the stretch.
      expect(busyMs).toBeGreaterThanOrEqual(4 * 95);
      expect(busyMs).toBeLessThanOrEqual(4 * wallMs);
      // One more, alone: the sum grows by its time only.
      const before = busyMs;
      await get(simulator, '/v1/survey');
      expect(simulator.stats().busyMs - before).toBeGreaterThanOrEqual(95);
    });
  });

  it('sees one request at a time from a sequential client', async () => {
    await withSimulator({ latencyMs: 10 }, async (simulator) => {
      for (let i = 0; i < 4; i++) await get(simulator, '/v1/survey');
      expect(simulator.stats().maxInFlight).toBe(1);
    });
  });

  it('counts by path without the query string, and faults served', async () => {
    await withSimulator({}, async (simulator) => {
      const id = simulator.truth().abTests[0]?.id;
      await get(simulator, '/v1/abtesting');
      await get(simulator, `/v1/abtesting/detail/${id}`);
      await get(simulator, '/v1/recordings?startdate=2024-03-01&enddate=2024-03-02');
      await get(simulator, '/v1/recordings?limit=1');
      simulator.setOptions({ faultRate: 1, faults: ['503'] });
      await get(simulator, '/v1/heatmaps');
      expect(simulator.stats()).toEqual({
        requests: 5,
        inFlight: 0,
        maxInFlight: 1,
        busyMs: expect.any(Number),
        faultsServed: 1,
        emptiesServed: 0,
        byPath: {
          '/v1/abtesting': 1,
          [`/v1/abtesting/detail/${id}`]: 1,
          '/v1/recordings': 2,
          '/v1/heatmaps': 1,
        },
        byKey: { 'sim-key': { requests: 5, inFlight: 0, maxInFlight: 1, startedAtMs: expect.any(Array) } },
      });
    });
  });

  it('starts counting afresh after resetStats()', async () => {
    await withSimulator({}, async (simulator) => {
      await Promise.all([get(simulator, '/v1/heatmaps'), get(simulator, '/v1/heatmaps')]);
      simulator.resetStats();
      expect(simulator.stats()).toEqual({
        requests: 0,
        inFlight: 0,
        maxInFlight: 0,
        busyMs: 0,
        faultsServed: 0,
        emptiesServed: 0,
        byPath: {},
        byKey: { 'sim-key': { requests: 0, inFlight: 0, maxInFlight: 0, startedAtMs: [] } },
      });
      await get(simulator, '/v1/personalization');
      expect(simulator.stats().byPath).toEqual({ '/v1/personalization': 1 });
    });
  });

  it('counts each accepted key apart, with the most it had in flight; an unknown key is not counted', async () => {
    // Long enough that the three requests overlap on a loaded machine too.
    await withSimulator({ latencyMs: 500, apiKeys: ['key-b'] }, async (simulator) => {
      const as = (key: string) =>
        fetch(`${simulator.url}/v1/heatmaps`, { headers: { authorization: key } }).then((r) => r.status);
      const statuses = await Promise.all([
        as('sim-key'),
        as('sim-key'),
        as('sim-key'),
        as('key-b'),
        as('nope'),
      ]);
      expect(statuses).toEqual([200, 200, 200, 200, 401]);
      expect(simulator.stats().byKey).toMatchObject({
        'sim-key': { requests: 3, inFlight: 0, maxInFlight: 3 },
        'key-b': { requests: 1, inFlight: 0, maxInFlight: 1 },
      });
      expect(Object.keys(simulator.stats().byKey)).toEqual(['sim-key', 'key-b']);
    });
  });

  it("records each key's request start times, in order, so a rate can be checked", async () => {
    await withSimulator({ apiKeys: ['key-b'] }, async (simulator) => {
      const as = (key: string) => fetch(`${simulator.url}/v1/heatmaps`, { headers: { authorization: key } });
      // The wall clock, as the database's request budgets read it (performance.timeOrigin + now()
      // drifts from it in a long-lived process, by hundreds of ms).
      const before = Date.now();
      for (let i = 0; i < 3; i++) {
        await as('sim-key');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      await as('key-b');
      const { byKey } = simulator.stats();
      const starts = byKey['sim-key']?.startedAtMs ?? [];
      expect(starts).toHaveLength(3);
      expect(starts[0]).toBeGreaterThanOrEqual(before - 1);
      expect((starts[2] ?? 0) - (starts[0] ?? 0)).toBeGreaterThanOrEqual(199);
      expect(byKey['key-b']?.startedAtMs).toHaveLength(1);
      // At least 100 ms apart (later under load): never two within 90 ms, all three within their span.
      expect(mostStartsWithin(starts, 90)).toBe(1);
      expect(mostStartsWithin(starts, (starts[2] ?? 0) - (starts[0] ?? 0))).toBe(3);
    });
  });

  it('with faultKeys, faults fire on those keys only', async () => {
    await withSimulator(
      { apiKeys: ['key-b'], faultRate: 1, faults: ['429'], faultKeys: ['key-b'] },
      async (simulator) => {
        const as = (key: string) =>
          fetch(`${simulator.url}/v1/heatmaps`, { headers: { authorization: key } }).then((r) => r.status);
        expect([await as('sim-key'), await as('key-b')]).toEqual([200, 429]);
      },
    );
  });
});

describe('mostStartsWithin', () => {
  it('counts the most starts in any window of the given length, both ends included', () => {
    expect(mostStartsWithin([], 1000)).toBe(0);
    expect(mostStartsWithin([5], 1000)).toBe(1);
    // Four a second, evenly: four in any second that does not reach the fifth...
    const even = [0, 250, 500, 750, 1000, 1250];
    expect(mostStartsWithin(even, 999)).toBe(4);
    // ...and five when both ends count.
    expect(mostStartsWithin(even, 1000)).toBe(5);
    // A burst in the middle of a slow stream, given out of order.
    expect(mostStartsWithin([3000, 0, 1500, 1510, 1520, 1530, 6000], 1000)).toBe(4);
  });
});
