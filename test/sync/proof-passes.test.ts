import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiClient } from '../../src/api/api-client.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { sourceKeys } from '../helpers/queue-cluster.js';
import { runAgainst, simulatorSource } from '../helpers/sync-harness.js';

/**
 * A run reads the days its last proof reopened again, pass after pass, each closed by the run's
 * last proof again (run-sync.ts). A later pass proves only the sources it read again: another
 * source's session is as its last proof left it, and proved again it would ask its canary again
 * and settle nothing new (an agency's dozens of sources, for one source's deploy).
 */

const FROM = '2026-03-01';
const TO = '2026-03-14';
const NIGHT = new Date('2026-03-16T03:00:00.000Z');

describe("a run's passes over days its proof reopened", () => {
  let t: TestDatabase;
  let sim: Simulator;

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 71, from: FROM, to: TO, apiKeys: sourceKeys(2) });
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
  });

  it('prove again only the sources whose days they read again', async () => {
    const [one, two] = sourceKeys(2).map((key, i) => simulatorSource(sim, `s${i + 1}`, key));
    if (one === undefined || two === undefined) throw new Error('two sources');
    let planned = 0;
    let readingAgain = false;
    const asked = { s1: [0, 0], s2: [0, 0] } as Record<string, [number, number]>;
    let doctored = false;
    const wrap = (client: ApiClient): ApiClient => ({
      ...client,
      window: async (resource, query, context) => {
        const counts = asked[client.source];
        if (counts !== undefined) counts[readingAgain ? 1 : 0] += 1;
        const items = await client.window(resource, query, context);
        // s1's last proof (the canary asked at a limit of its own, below the day limit) comes
        // back one item short, once: the reading it proves is stale, its days are read again.
        if (client.source === 's1' && query.limit < 1000 && !doctored && items.length > 1) {
          doctored = true;
          return items.slice(0, -1);
        }
        return items;
      },
    });
    const result = await runAgainst(t, sim, {
      now: NIGHT,
      sources: [one, two],
      request: { trigger: 'backfill', range: { from: FROM, to: TO }, resources: ['feedback'] },
      wrapClient: wrap,
      onWindow: (_outcome, _done, total) => {
        planned ||= total;
        // The days read again count as more work: a window of the second pass has ended.
        if (total > planned) readingAgain = true;
      },
    });
    expect(result.status).toBe('ok');
    expect(doctored).toBe(true);
    expect(readingAgain).toBe(true);
    // Both read and proved at first; in the second pass s1 alone, read again and proved again.
    expect(asked.s1?.[0]).toBeGreaterThan(0);
    expect(asked.s2?.[0]).toBeGreaterThan(0);
    expect(asked.s1?.[1]).toBeGreaterThan(0);
    expect(asked.s2?.[1]).toBe(0);
  }, 60_000);
});
