import { sql } from 'kysely';
import type { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendWindowJobs, type WindowJob } from '../../src/queue/window-queue.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { capturingLogger } from '../helpers/fake-clock.js';
import {
  jobState,
  openMainQueue,
  startSyncRun,
  startWorker,
  TEST_QUEUE_SETTINGS,
} from '../helpers/queue-harness.js';
import { simulatorSource } from '../helpers/sync-harness.js';

/**
 * A worker whose database connections are killed (pg_terminate_backend, a restarted server) goes
 * on taking jobs, and while it cannot, it does not look alive: its heartbeat stops.
 */
const HEARTBEAT_MS = 50;

describe('a worker whose connections are killed', () => {
  let t: TestDatabase;
  let sim: Simulator;
  let boss: PgBoss;

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 3, from: '2026-03-01', to: '2026-03-05', cap: 4000 });
    boss = await openMainQueue(t, { slots: 2 });
  });
  afterAll(async () => {
    await boss?.stop({ graceful: false, timeout: 1000 });
    await sim?.stop();
    await t?.drop();
  });

  /** Every other session of the test's database: the worker's lanes, its pool, pg-boss's. */
  const killBackends = () =>
    sql`select pg_terminate_backend(pid) from pg_stat_activity
         where datname = current_database() and pid <> pg_backend_pid()`.execute(t.db);
  /** Milliseconds since the worker's last heartbeat, by the server's clock. */
  const heartbeatAge = async () => {
    const { rows } = await sql<{ age: number }>`
      select (extract(epoch from clock_timestamp() - last_seen_at) * 1000)::float8 as age
        from queue_workers where stopped_at is null`.execute(t.db);
    return rows[0]?.age ?? Number.POSITIVE_INFINITY;
  };
  /**
   * As a planner would send it; a pooled connection killed a moment ago fails once. The queue's
   * pool holds up to 4 (window-queue.ts), all of them idle and killed at once: the fifth try gets a
   * new one.
   */
  const send = async (job: WindowJob): Promise<string | undefined> => {
    for (let attempt = 1; ; attempt++)
      try {
        return (await sendWindowJobs(boss, 'sync', [job], TEST_QUEUE_SETTINGS))[0];
      } catch (error) {
        if (attempt === 5) throw error;
      }
  };

  it('opens its slot sessions again and takes the next job; while its lanes cannot reach the slots, its heartbeat stops and they back off instead of looping', async () => {
    const { job } = await startSyncRun(t, { startDay: '2026-03-01', today: '2026-03-06' });
    const logs = capturingLogger('warn');
    const stop = new AbortController();
    const worker = startWorker(t, boss, {
      logger: logs.logger,
      sources: [simulatorSource(sim)],
      workerConcurrency: 2,
      signal: stop.signal,
      heartbeatMs: HEARTBEAT_MS,
    });
    try {
      await expect.poll(heartbeatAge, { timeout: 5_000 }).toBeLessThan(10 * HEARTBEAT_MS);

      // Idle, its connections killed: the next job is still taken and done.
      await killBackends();
      const first = await send(job('2026-03-02'));
      await expect.poll(() => jobState(t, first), { timeout: 10_000 }).toBe('completed');
      await expect.poll(heartbeatAge, { timeout: 5_000 }).toBeLessThan(10 * HEARTBEAT_MS);

      // A job waits, and the lanes cannot claim a slot: no heartbeat, and few error lines.
      await sql`alter table queue_slots rename to queue_slots_away`.execute(t.db);
      await killBackends();
      const errorsBefore = logs.lines.filter((l) => l.msg === 'worker lane error; trying again').length;
      const second = await send(job('2026-03-03'));
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      expect(await jobState(t, second)).toBe('created');
      expect(await heartbeatAge()).toBeGreaterThan(1_000);
      const errors =
        logs.lines.filter((l) => l.msg === 'worker lane error; trying again').length - errorsBefore;
      // At the poll interval, 2 lanes would have logged about 200 lines in 2 s; backing off, ~12.
      expect(errors).toBeGreaterThan(0);
      expect(errors).toBeLessThan(30);

      // The slots back: the job is taken, and the heartbeat resumes.
      await sql`alter table queue_slots_away rename to queue_slots`.execute(t.db);
      await expect.poll(() => jobState(t, second), { timeout: 10_000 }).toBe('completed');
      await expect.poll(heartbeatAge, { timeout: 5_000 }).toBeLessThan(10 * HEARTBEAT_MS);
    } finally {
      stop.abort();
      await worker.catch(() => {});
    }
  }, 60_000);
});
