import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst } from '../helpers/sync-harness.js';
import { truthItems, warehouseItems } from '../helpers/warehouse-truth.js';

describe('concurrent windows', () => {
  let t: TestDatabase;
  let sim: Simulator;

  beforeAll(async () => {
    t = await createTestDatabase();
    // Busy days: feedback and survey windows of many days share the same visitors.
    sim = await startSimulator({
      seed: 4,
      from: '2026-01-01',
      to: '2026-01-30',
      cap: 4000,
      volume: { feedbackPerDay: 60, surveyPerDay: 60, busyDayFeedback: 60 },
    });
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
  });

  it('writing shared visitors from 8 windows at once neither deadlocks nor loses a window', async () => {
    for (let round = 0; round < 3; round++) {
      // Fresh rows every round: an edit per visitor would be ideal, a new source is enough to insert again.
      const result = await runAgainst(t, sim, {
        now: new Date('2026-01-31T05:00:00.000Z'),
        settings: { concurrency: 8, startDate: '2026-01-01' },
        sources: [{ name: `round-${round}`, baseUrl: sim.url, apiKey: sim.apiKey }],
      });
      expect(result.windows.filter((w) => w.status === 'failed').map((w) => w.error)).toEqual([]);
      expect(result.status).toBe('ok');
      expect(await warehouseItems(t, `round-${round}`)).toEqual(truthItems(sim.truth()));
    }
  }, 90_000); // three 30-day syncs of six resources, beside other test files

  it('keeps at most INSIGHTS_CONCURRENCY requests in flight, across every source and resource', async () => {
    sim.setOptions({ latencyMs: 30 });
    try {
      sim.resetStats();
      const result = await runAgainst(t, sim, {
        now: new Date('2026-01-31T05:00:00.000Z'),
        settings: { concurrency: 3, startDate: '2026-01-01' },
        sources: [
          { name: 'bound-a', baseUrl: sim.url, apiKey: sim.apiKey },
          { name: 'bound-b', baseUrl: sim.url, apiKey: sim.apiKey },
        ],
      });
      expect(result.status).toBe('ok');
      expect(sim.stats().requests).toBeGreaterThan(100);
      // The bound is used (3 at once) and never exceeded.
      expect(sim.stats().maxInFlight).toBe(3);
    } finally {
      sim.setOptions({ latencyMs: 0 });
    }
  });
});
