/**
 * A source's requests-per-second budget holds across every process that
 * requests from it (the planner's snapshots and each worker's windows), and in process too; a
 * source without one is not slowed by it. The simulator notes when each request of a key arrived.
 */
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { bookkeepingSchema, queueSchema } from '../../src/db/bookkeeping.js';
import { windowQueueName } from '../../src/queue/window-queue.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { mostStartsWithin } from '../../src/simulator/stats.js';
import { addDays, todayUtc } from '../../src/time/days.js';
import { runCli } from '../helpers/cli.js';
import { compareWithTruth } from '../helpers/completeness-oracle.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { sourceKeys, startCluster } from '../helpers/queue-cluster.js';
import { runAgainst } from '../helpers/sync-harness.js';
import { truthItems, warehouseItems } from '../helpers/warehouse-truth.js';

/**
 * Every reservation a source's requests make, as the database granted it: a trigger on
 * request_budgets notes each new next_at (a reservation's start is next_at less 1/rps).
 */
async function logReservations(t: TestDatabase): Promise<void> {
  const state = bookkeepingSchema(t.schema);
  for (const statement of [
    `create table "${state}".budget_log (source_id text not null, next_at timestamptz not null)`,
    `create function "${state}".log_budget() returns trigger language plpgsql as $$
      begin insert into "${state}".budget_log values (new.source_id, new.next_at); return new; end $$`,
    `create trigger log_budget after insert or update on "${state}".request_budgets
      for each row execute function "${state}".log_budget()`,
  ])
    await sql.raw(statement).execute(t.db);
}

/**
 * What a budget of `rps` promises, checked without trusting any timer: the database granted the
 * source's requests starts at least 1/rps apart, exactly one per request the simulator received,
 * and no request reached the simulator before its start (the k-th arrival is not before the k-th
 * start). How late each request arrives after its start depends on the machine's load, and is
 * not the budget's to promise; a budget ignored (or kept per process) fails the first two.
 */
async function expectWithinBudget(
  t: TestDatabase,
  source: string,
  arrivals: readonly number[],
  rps: number,
): Promise<void> {
  const { rows } = await sql<{ starts_at_ms: number }>`
    select extract(epoch from next_at)::float8 * 1000 - ${1000 / rps}::float8 as starts_at_ms
      from ${sql.id(bookkeepingSchema(t.schema), 'budget_log')} where source_id = ${source} order by next_at`.execute(
    t.db,
  );
  const starts = rows.map((r) => r.starts_at_ms);
  const sorted = [...arrivals].sort((a, b) => a - b);
  expect(sorted.length).toBeGreaterThan(2 * rps);
  expect(starts).toHaveLength(sorted.length);
  const gaps = starts.slice(1).map((start, i) => start - (starts[i] ?? 0));
  expect(Math.min(...gaps)).toBeGreaterThanOrEqual(1000 / rps - 0.01);
  // The clocks are one machine's; a few milliseconds for how each process reads it.
  const early = sorted.filter((arrival, k) => arrival < (starts[k] ?? 0) - 5);
  expect(early).toEqual([]);
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
      await logReservations(t);
      const cluster = startCluster(t, sim, {
        sources: 2,
        workers: 2,
        sourceFields: [{ requests_per_second: 4 }, {}],
      });
      try {
        const backfill = await runCli(['backfill', '--queue', '--from', from, '--to', to], cluster.env);
        expect(backfill.stderr).not.toMatch(/"level":"(error|fatal)"/);
        expect(backfill.code).toBe(0);

        const byKey = sim.stats().byKey;
        const paced = byKey['key-s1']?.startedAtMs ?? [];
        const free = byKey['key-s2']?.startedAtMs ?? [];
        await expectWithinBudget(t, 's1', paced, 4);
        // The same plan on the same data was not paced: requests closer together than the budget allows.
        expect(mostStartsWithin(free, 1000 / 4)).toBeGreaterThan(1);
        // Its windows were done before the budgeted source's (the snapshots come after both).
        const spans = await sql<{ name: string; seconds: number }>`
          select name, extract(epoch from max(completed_on) - min(created_on))::float8 as seconds
            from ${sql.id(queueSchema(t.schema), 'job')} group by name`.execute(t.db);
        const span = Object.fromEntries(spans.rows.map((r) => [r.name, r.seconds]));
        expect(span[windowQueueName('s2')]).toBeLessThan(span[windowQueueName('s1')] ?? 0);

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
    await logReservations(t);
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
      await expectWithinBudget(t, 'paced', paced, 5);
      // Not held to the budget (slowed a little all the same: in process, a request waiting for its
      // budget holds one of INSIGHTS_CONCURRENCY's places, docs/scaling.md).
      expect(mostStartsWithin(free, 1000 / 5)).toBeGreaterThan(1);
      expect(await warehouseItems(t, 'paced')).toEqual(truthItems(sim.truth()));
      expect(await warehouseItems(t, 'free')).toEqual(truthItems(sim.truth()));
    } finally {
      await t.drop();
      await sim.stop();
    }
  }, 60_000);
});
