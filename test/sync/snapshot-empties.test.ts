/**
 * No empty snapshot answer is trusted alone: a list or a test's results that come back `200 []`
 * are asked again (as often as a failed request would be tried, with the same backoff) before
 * the empty answer is taken as true, on a fresh warehouse as on a full one. Over several seeds
 * with 30% of snapshot answers transiently empty, a backfill and then a sync leave the warehouse
 * holding exactly what the simulator serves, and the run summary counts the re-asks.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Resource } from '../../src/schemas/resources.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import type { RunResult } from '../../src/sync/outcomes.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst, simulatorSource } from '../helpers/sync-harness.js';

const FROM = '2026-03-01';
const TO = '2026-03-05';
const SNAPSHOTS: Resource[] = ['abtesting', 'personalization', 'heatmaps'];
const SEEDS = [1, 2, 3, 4, 5, 6, 7, 8, 9];

interface Snapshot {
  abTests: string[];
  personalizationTests: string[];
  heatmaps: string[];
  results: string[];
}

function truthOf(sim: Simulator): Snapshot {
  const truth = sim.truth();
  const results = (['abtesting', 'personalization'] as const).flatMap((kind) =>
    Object.entries(truth.results[kind]).flatMap(([testId, variants]) =>
      variants.map((v) => `${kind}/${testId}/${v.variant}`),
    ),
  );
  return {
    abTests: truth.abTests.map((x) => x.id).sort(),
    personalizationTests: truth.personalizationTests.map((x) => x.id).sort(),
    heatmaps: truth.heatmaps.map((x) => x.id).sort(),
    results: results.sort(),
  };
}

async function warehouseOf(t: TestDatabase, source: string): Promise<Snapshot> {
  const ids = async (table: 'ab_tests' | 'personalization_tests' | 'heatmaps') =>
    (
      await t.db
        .selectFrom(table)
        .select('id')
        .where('source_id', '=', source)
        .where('removed_at', 'is', null)
        .execute()
    )
      .map((r) => r.id)
      .sort();
  const results = await t.db
    .selectFrom('test_results')
    .select(['test_kind', 'test_id', 'variant'])
    .where('source_id', '=', source)
    .where('removed_at', 'is', null)
    .execute();
  return {
    abTests: await ids('ab_tests'),
    personalizationTests: await ids('personalization_tests'),
    heatmaps: await ids('heatmaps'),
    results: results.map((r) => `${r.test_kind}/${r.test_id}/${r.variant}`).sort(),
  };
}

function reasked(result: RunResult, source: string): number {
  return SNAPSHOTS.reduce((n, r) => n + (result.summary[source]?.[r]?.reasked ?? 0), 0);
}

describe('transient empty snapshot answers, over several seeds', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(async () => {
    await t.drop();
  });

  it.each(SEEDS)(
    'seed %i: a backfill and a sync on a fresh warehouse load every snapshot row',
    async (seed) => {
      const sim = await startSimulator({ seed, from: FROM, to: TO, snapshotEmptyRate: 0.3 });
      // A source per seed: each starts on a warehouse that lists nothing of it.
      const source = simulatorSource(sim, `seed-${seed}`);
      try {
        const backfill = await runAgainst(t, sim, {
          now: new Date('2026-03-06T05:00:00.000Z'),
          sources: [source],
          request: { trigger: 'backfill', range: { from: FROM, to: TO }, resources: SNAPSHOTS },
        });
        expect(backfill.status).toBe('ok');
        expect(await warehouseOf(t, source.name)).toEqual(truthOf(sim));
        // Every empty answer served was asked again, and counted.
        expect(reasked(backfill, source.name)).toBe(sim.stats().emptiesServed);
        expect(sim.stats().emptiesServed).toBeGreaterThan(0);

        sim.resetStats();
        const sync = await runAgainst(t, sim, {
          now: new Date('2026-03-07T05:00:00.000Z'),
          sources: [source],
          request: { resources: SNAPSHOTS },
        });
        expect(sync.status).toBe('ok');
        expect(await warehouseOf(t, source.name)).toEqual(truthOf(sim));
        expect(reasked(sync, source.name)).toBe(sim.stats().emptiesServed);
      } finally {
        await sim.stop();
      }
    },
  );
});
