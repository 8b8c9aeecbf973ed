/**
 * Issue 14, item 3: a source's requests-per-second budget holds across every process that
 * requests from it (the planner's snapshots and each worker's windows), and in process too; a
 * source without one is not slowed by it. The simulator notes when each request of a key arrived.
 */
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { mostStartsWithin } from '../../src/simulator/stats.js';
import { windowQueueName } from '../../src/sync/window-queue.js';
import { addDays, todayUtc } from '../../src/time/days.js';
import { runCli } from '../helpers/cli.js';
import { compareWithTruth } from '../helpers/completeness-oracle.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { sourceKeys, startCluster } from '../helpers/queue-cluster.js';
import { runAgainst } from '../helpers/sync-harness.js';
import { truthItems, warehouseItems } from '../helpers/warehouse-truth.js';

/**
 * Reserved starts are exactly 1/rps apart; a request reaches the simulator a little after its
 * reserved start (a timer firing late, the event loop busy with another window, the socket), by
 * a different amount each time. Checked over windows this much shorter than a second, and on the
 * sum of the gaps, so that such lateness does not count as a breach; a budget ignored by even one
 * process (or kept per process) overshoots both by far more.
 */
const LATENESS_MS = 100;

/** What a budget of `rps` allows, checked on a key's start times. */
function expectWithinBudget(starts: readonly number[], rps: number): void {
  const sorted = [...starts].sort((a, b) => a - b);
  expect(sorted.length).toBeGreaterThan(2 * rps);
  expect(mostStartsWithin(sorted, 1000 - LATENESS_MS)).toBeLessThanOrEqual(Math.ceil(rps));
  const span = (sorted.at(-1) ?? 0) - (sorted[0] ?? 0);
  expect(span).toBeGreaterThanOrEqual(((sorted.length - 1) * 1000) / rps - LATENESS_MS);
}

const PROCESS_TEST_MS = 120_000;

describe('a budget of 4 requests per second on one source, none on the other, two workers', () => {
  const today = todayUtc(new Date());
  const from = addDays(today, -5);
  const to = addDays(today, -1);
  let sim: Simulator;
  let t: TestDatabase;
  afterAll(async () => {
    await t?.drop();
    await sim?.stop();
  });

  it(
    'the budgeted source stays within it across the planner and both workers; the other runs faster; both load the truth',
    async () => {
      sim = await startSimulator({
        seed: 31,
        from,
        to: today,
        latencyMs: 30,
        apiKeys: sourceKeys(2),
        volume: { feedbackPerDay: 3, surveyPerDay: 2, recordingsPerDay: 2, busyDayFeedback: 6 },
      });
      t = await createTestDatabase();
      const cluster = startCluster(t, sim, {
        sources: 2,
        workers: 2,
        sourceFields: [{ requests_per_second: 4 }, {}],
      });
      try {
        const backfill = await runCli(['backfill', '--queue', '--from', from, '--to', to], cluster.env);
        expect(backfill.stderr).not.toMatch(/"level":5\d/);
        expect(backfill.code).toBe(0);

        const byKey = sim.stats().byKey;
        const paced = byKey['key-s1']?.startedAtMs ?? [];
        const free = byKey['key-s2']?.startedAtMs ?? [];
        expectWithinBudget(paced, 4);
        // The same plan on the same data went out at several times the budget's rate.
        expect(mostStartsWithin(free, 1000)).toBeGreaterThan(2 * 4);
        // Its windows were done long before the budgeted source's (the snapshots come after both).
        const spans = await sql<{ name: string; seconds: number }>`
          select name, extract(epoch from max(completed_on) - min(created_on))::float8 as seconds
            from ${sql.id(`${t.schema}_queue`, 'job')} group by name`.execute(t.db);
        const span = Object.fromEntries(spans.rows.map((r) => [r.name, r.seconds]));
        expect(span[windowQueueName('s2')]).toBeLessThan((span[windowQueueName('s1')] ?? 0) / 2);

        for (const source of cluster.sources) {
          const compared = await compareWithTruth(t, source, sim.truth(), { from, to });
          for (const resource of Object.values(compared)) {
            expect(resource.stored).toBe(resource.expected);
            expect(resource.extra).toBe(0);
          }
        }
        // The budget's one row: the budgeted source's, and no other.
        const budgets = await t.db.selectFrom('request_budgets').select('source_id').execute();
        expect(budgets.map((b) => b.source_id)).toEqual(['s1']);
      } finally {
        await cluster.stop();
      }
    },
    PROCESS_TEST_MS,
  );
});

describe('in process (sync without --queue)', () => {
  it('holds a budget of 5 per second with 4 requests in flight; the unbudgeted source is not held to it', async () => {
    const sim = await startSimulator({
      seed: 32,
      from: '2026-03-01',
      to: '2026-03-04',
      latencyMs: 20,
      apiKeys: ['key-free'],
      volume: { feedbackPerDay: 3, surveyPerDay: 2, recordingsPerDay: 2, busyDayFeedback: 6 },
    });
    const t = await createTestDatabase();
    try {
      const result = await runAgainst(t, sim, {
        now: new Date('2026-03-05T05:00:00.000Z'),
        settings: { concurrency: 4, startDate: '2026-03-01' },
        sources: [
          { name: 'paced', baseUrl: sim.url, apiKey: sim.apiKey, requestsPerSecond: 5 },
          { name: 'free', baseUrl: sim.url, apiKey: 'key-free' },
        ],
      });
      expect(result.status).toBe('ok');
      const byKey = sim.stats().byKey;
      const paced = byKey[sim.apiKey]?.startedAtMs ?? [];
      const free = byKey['key-free']?.startedAtMs ?? [];
      expectWithinBudget(paced, 5);
      // Not held to the budget. Slowed a little all the same: in process, a request waiting for its
      // budget holds one of INSIGHTS_CONCURRENCY's places (docs/scaling.md).
      expect(mostStartsWithin(free, 1000)).toBeGreaterThan(5 + 2);
      expect(await warehouseItems(t, 'paced')).toEqual(truthItems(sim.truth()));
      expect(await warehouseItems(t, 'free')).toEqual(truthItems(sim.truth()));
    } finally {
      await t.drop();
      await sim.stop();
    }
  }, 60_000);
});
