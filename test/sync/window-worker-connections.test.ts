import { sql } from 'kysely';
import type { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queueSchema } from '../../src/db/bookkeeping.js';
import { LATEST_MIGRATION } from '../../src/db/migrator.js';
import { silentLogger } from '../../src/log/logger.js';
import { ensureSlots } from '../../src/queue/source-slots.js';
import {
  ensureWindowQueue,
  openQueue,
  sendWindowJobs,
  type WindowJob,
} from '../../src/queue/window-queue.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { runWorker } from '../../src/sync/window-worker.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { capturingLogger } from '../helpers/fake-clock.js';
import { simulatorSource, TEST_SETTINGS } from '../helpers/sync-harness.js';

/**
 * A worker whose database connections are killed (pg_terminate_backend, a restarted server) goes
 * on taking jobs, and while it cannot, it does not look alive: its heartbeat stops.
 */

const settings = {
  sourceConcurrency: 2,
  queueExpireSeconds: 60,
  queueMaintenanceSeconds: 60,
  queueRetryLimit: 3,
};
const HEARTBEAT_MS = 50;

describe('a worker whose connections are killed', () => {
  let t: TestDatabase;
  let sim: Simulator;
  let boss: PgBoss;

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 3, from: '2026-03-01', to: '2026-03-05', cap: 4000 });
    boss = await openQueue(t.url, t.schema, settings, silentLogger());
    await ensureWindowQueue(boss, t.schema, 'main', settings);
    await ensureSlots(t.db, ['main'], 2);
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
  /** As a planner would send it; a pooled connection killed a moment ago fails once. */
  const send = async (job: WindowJob): Promise<string | undefined> => {
    for (let attempt = 1; ; attempt++)
      try {
        return (await sendWindowJobs(boss, 'sync', [job], settings))[0];
      } catch (error) {
        if (attempt === 3) throw error;
      }
  };
  const jobState = async (id: string | undefined) => {
    const { rows } = await sql<{ state: string }>`
      select state::text as state from ${sql.id(queueSchema(t.schema), 'job')} where id = ${id}`.execute(
      t.db,
    );
    return rows[0]?.state;
  };

  it('opens its slot sessions again and takes the next job; while its lanes cannot reach the slots, its heartbeat stops and they back off instead of looping', async () => {
    const run = await sql<{ run_id: string }>`
      insert into sync_runs (trigger, status) values ('sync', 'running') returning run_id`.execute(t.db);
    const job = (day: string): WindowJob => ({
      runId: Number(run.rows[0]?.run_id),
      source: 'main',
      resource: 'feedback',
      day,
      startDay: '2026-03-01',
      today: '2026-03-06',
      schema: LATEST_MIGRATION,
    });
    const logs = capturingLogger('warn');
    const stop = new AbortController();
    const worker = runWorker({
      pool: t.pool,
      db: t.db,
      url: t.url,
      schema: t.schema,
      boss,
      logger: logs.logger,
      sources: [simulatorSource(sim)],
      settings: { ...TEST_SETTINGS, workerConcurrency: 2 },
      signal: stop.signal,
      pollMs: 20,
      heartbeatMs: HEARTBEAT_MS,
    });
    try {
      await expect.poll(heartbeatAge, { timeout: 5_000 }).toBeLessThan(10 * HEARTBEAT_MS);

      // Idle, its connections killed: the next job is still taken and done.
      await killBackends();
      const first = await send(job('2026-03-02'));
      await expect.poll(() => jobState(first), { timeout: 10_000 }).toBe('completed');
      await expect.poll(heartbeatAge, { timeout: 5_000 }).toBeLessThan(10 * HEARTBEAT_MS);

      // A job waits, and the lanes cannot claim a slot: no heartbeat, and few error lines.
      await sql`alter table queue_slots rename to queue_slots_away`.execute(t.db);
      await killBackends();
      const errorsBefore = logs.lines.filter((l) => l.msg === 'worker lane error; trying again').length;
      const second = await send(job('2026-03-03'));
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      expect(await jobState(second)).toBe('created');
      expect(await heartbeatAge()).toBeGreaterThan(1_000);
      const errors =
        logs.lines.filter((l) => l.msg === 'worker lane error; trying again').length - errorsBefore;
      // At the poll interval, 2 lanes would have logged about 200 lines in 2 s; backing off, ~12.
      expect(errors).toBeGreaterThan(0);
      expect(errors).toBeLessThan(30);

      // The slots back: the job is taken, and the heartbeat resumes.
      await sql`alter table queue_slots_away rename to queue_slots`.execute(t.db);
      await expect.poll(() => jobState(second), { timeout: 10_000 }).toBe('completed');
      await expect.poll(heartbeatAge, { timeout: 5_000 }).toBeLessThan(10 * HEARTBEAT_MS);
    } finally {
      stop.abort();
      await worker.catch(() => {});
    }
  }, 60_000);
});
