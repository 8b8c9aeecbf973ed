import { writeFileSync } from 'node:fs';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { queueSchema } from '../../src/db/bookkeeping.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { addDays, todayUtc } from '../../src/time/days.js';
import { runCli, startCli } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { sourceKeys, startCluster } from '../helpers/queue-cluster.js';

/**
 * How a queued run ends when it cannot finish normally (Ctrl+C, a rejected key), and
 * the scheduler's setting. The happy path, the bounds and a dying worker are in
 * queue-workers.trials.ts and test/reliability/queue-kill.trials.ts.
 */

const TODAY = todayUtc(new Date());
const FROM = addDays(TODAY, -6);
const TO = addDays(TODAY, -1);
const PROCESS_TEST_MS = 90_000;

describe('queued runs that cannot finish normally, and the schedule', () => {
  let sim: Simulator;
  let t: TestDatabase;
  const queueJobs = (state: string) =>
    sql<{
      n: number;
    }>`select count(*)::int as n from ${sql.id(queueSchema(t.schema), 'job')} where state = ${state}::text::${sql.id(queueSchema(t.schema), 'job_state')}`
      .execute(t.db)
      .then((r) => r.rows[0]?.n ?? 0);

  beforeAll(async () => {
    sim = await startSimulator({
      seed: 16,
      from: FROM,
      to: TODAY,
      apiKeys: sourceKeys(2),
      volume: { feedbackPerDay: 2, surveyPerDay: 2, recordingsPerDay: 2, busyDayFeedback: 4 },
    });
  });
  afterAll(() => sim.stop());

  it(
    'Ctrl+C while no worker runs: the queued jobs are cancelled, the run is interrupted, exit 130',
    async () => {
      t = await createTestDatabase();
      const cluster = startCluster(t, sim, { sources: 2, workers: 0 });
      try {
        const planner = startCli(['backfill', '--queue', '--from', FROM, '--to', TO], cluster.env);
        await vi.waitFor(async () => expect(await queueJobs('created').catch(() => 0)).toBe(2 * 3 * 6), {
          timeout: 30_000,
          interval: 200,
        });
        planner.child.kill('SIGINT');
        const result = await planner.done;
        expect(result.code, result.stderr).toBe(130);
        expect(await queueJobs('cancelled')).toBe(2 * 3 * 6);
        const runs = await t.db.selectFrom('sync_runs').select('status').execute();
        expect(runs.map((r) => r.status)).toEqual(['interrupted']);
        expect(await t.db.selectFrom('sync_windows').select('day').execute()).toEqual([]);
      } finally {
        await cluster.stop();
        await t.drop();
      }
    },
    PROCESS_TEST_MS,
  );

  it(
    "a rejected key: the source's other jobs are cancelled, the other source loads, exit 3",
    async () => {
      t = await createTestDatabase();
      const cluster = startCluster(t, sim, { sources: 2, workers: 1 });
      try {
        // Source s2's key is wrong (the same file the workers read: they send what it says).
        writeFileSync(
          cluster.env.INSIGHTS_CONFIG as string,
          JSON.stringify({
            sources: [
              { name: 's1', base_url: sim.url, api_key: 'key-s1' },
              { name: 's2', base_url: sim.url, api_key: 'not-the-key' },
            ],
          }),
        );
        const result = await runCli(['backfill', '--queue', '--from', FROM, '--to', TO], cluster.env);
        expect(result.code, result.stderr).toBe(3);
        expect(result.stderr).toContain('API key rejected');
        const done = await t.db
          .selectFrom('sync_windows')
          .select(['source_id'])
          .where('status', '=', 'done')
          .execute();
        expect(done).toHaveLength(3 * 6);
        expect(new Set(done.map((w) => w.source_id))).toEqual(new Set(['s1']));
        // Of s2's 18 windows only those in flight when the first 401 came made a request (its 2
        // slots); the rest were skipped by the worker or cancelled by the planner.
        const s2 = await sql<{ state: string; outcome: string | null }>`
          select state::text, output->'outcome'->>'status' as outcome
            from ${sql.id(queueSchema(t.schema), 'job')} where name = 'windows.s2'`.execute(t.db);
        expect(s2.rows).toHaveLength(3 * 6);
        expect(s2.rows.filter((r) => r.outcome === 'failed').length).toBeLessThanOrEqual(2);
        expect(
          s2.rows.every((r) => r.state === 'cancelled' || r.outcome === 'failed' || r.outcome === 'skipped'),
        ).toBe(true);
      } finally {
        await cluster.stop();
        await t.drop();
      }
    },
    PROCESS_TEST_MS,
  );

  it(
    "while a queued backfill waits for its jobs, a queued sync starts (the run lock is free), neither run is taken for abandoned, and the sync's windows run first",
    async () => {
      t = await createTestDatabase();
      // One source and one worker lane: the order the jobs are taken in is the queue's order.
      const cluster = startCluster(t, sim, {
        sources: 1,
        workers: 0,
        env: { INSIGHTS_WORKER_CONCURRENCY: '1' },
      });
      const backfillJobs = 3 * 6;
      try {
        const backfill = startCli(['backfill', '--queue', '--from', FROM, '--to', TO], cluster.env);
        await vi.waitFor(async () => expect(await queueJobs('created').catch(() => 0)).toBe(backfillJobs), {
          timeout: 30_000,
          interval: 200,
        });
        const sync = startCli(['sync', '--queue'], cluster.env);
        await vi.waitFor(
          async () => {
            const runs = await t.db
              .selectFrom('sync_runs')
              .select(['trigger', 'status'])
              .orderBy('run_id')
              .execute();
            expect(runs).toEqual([
              { trigger: 'backfill', status: 'running' },
              { trigger: 'sync', status: 'running' },
            ]);
            expect(await queueJobs('created')).toBeGreaterThan(backfillJobs);
          },
          { timeout: 30_000, interval: 200 },
        );
        cluster.startWorker();
        const synced = await sync.done;
        expect(synced.code, synced.stderr).toBe(0);
        const backfilled = await backfill.done;
        expect(backfilled.code, backfilled.stderr).toBe(0);
        const runs = await t.db
          .selectFrom('sync_runs')
          .select(['run_id', 'trigger', 'status'])
          .orderBy('run_id')
          .execute();
        expect(runs.map((r) => `${r.trigger} ${r.status}`)).toEqual(['backfill ok', 'sync ok']);
        // Taken in the queue's order: every job of the sync before any of the backfill.
        const order = await sql<{ run_id: number }>`
          select (data->>'runId')::int as run_id from ${sql.id(queueSchema(t.schema), 'job')}
           where name like 'windows.%' and state = 'completed' order by started_on`.execute(t.db);
        const syncRun = runs[1]?.run_id;
        const firstBackfill = order.rows.findIndex((r) => r.run_id !== syncRun);
        expect(firstBackfill).toBeGreaterThan(0);
        expect(order.rows.slice(firstBackfill).every((r) => r.run_id !== syncRun)).toBe(true);
      } finally {
        await cluster.stop();
        await t.drop();
      }
    },
    PROCESS_TEST_MS,
  );

  it(
    'INSIGHTS_SCHEDULE_QUEUE=true: the scheduled run sends its windows to the workers',
    async () => {
      t = await createTestDatabase();
      const cluster = startCluster(t, sim, {
        sources: 2,
        workers: 1,
        env: { INSIGHTS_SCHEDULE_QUEUE: 'true', INSIGHTS_START_DATE: FROM },
      });
      const scheduler = startCli(['schedule', '--run-now'], cluster.env);
      try {
        await vi.waitFor(
          async () => {
            const runs = await t.db.selectFrom('sync_runs').select(['trigger', 'status']).execute();
            // After the sync the night's scrub may start its verify run (in this process, not
            // queued): the scheduled sync is the run this test is about.
            expect(runs.filter((run) => run.trigger !== 'verify')).toEqual([
              { trigger: 'schedule', status: 'ok' },
            ]);
          },
          { timeout: 60_000, interval: 300 },
        );
        // Every window of the run went through the queue: one completed job each.
        const windows = await t.db.selectFrom('sync_windows').select('day').execute();
        expect(await queueJobs('completed')).toBe(windows.length);
        expect(windows.length).toBe(2 * 3 * 7);
      } finally {
        scheduler.child.kill('SIGTERM');
        expect((await scheduler.done).code).toBe(0);
        await cluster.stop();
        await t.drop();
      }
    },
    PROCESS_TEST_MS,
  );
});
