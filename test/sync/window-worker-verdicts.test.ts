import { sql } from 'kysely';
import type { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queueSchema } from '../../src/db/bookkeeping.js';
import { sendWindowJobs } from '../../src/queue/window-queue.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { capturingLogger } from '../helpers/fake-clock.js';
import { interceptQueries } from '../helpers/query-spy.js';
import {
  jobState,
  openMainQueue,
  startSyncRun,
  startWorker,
  TEST_QUEUE_SETTINGS,
} from '../helpers/queue-harness.js';
import { simulatorSource } from '../helpers/sync-harness.js';

/**
 * A worker hears the run's stale verdicts before each window and after it, any resource's of the
 * source, and tells its own after it (reading-store.ts exchangeVerdicts). Once the worker knows the run, what it hears is read
 * with the window's slot, in the round trips that claim it and let it go: no read of its own,
 * where it made two a window.
 */
const VERDICT_READ = /^select "last_stale_at" from "queue_run_checks"/;

describe("a worker's stale verdicts", () => {
  let t: TestDatabase;
  let sim: Simulator;
  let boss: PgBoss;
  const statements: string[] = [];

  beforeAll(async () => {
    t = await createTestDatabase();
    // Each request answered after 300 ms: a verdict can be told while a window runs.
    sim = await startSimulator({ seed: 3, from: '2026-03-01', to: '2026-03-09', cap: 4000, latencyMs: 300 });
    boss = await openMainQueue(t, { slots: 2 });
    interceptQueries(t.pool, (args, query) => {
      const first = args[0] as string | { text?: string } | undefined;
      statements.push(typeof first === 'string' ? first : (first?.text ?? ''));
      return query(...args);
    });
  });
  afterAll(async () => {
    await boss?.stop({ graceful: false, timeout: 1000 });
    await sim?.stop();
    await t?.drop();
  });

  const completed = async (ids: (string | undefined)[]) => {
    const { rows } = await sql<{ n: number }>`
      select count(*)::int as n from ${sql.id(queueSchema(t.schema), 'job')}
       where id = any(${ids}::uuid[]) and state = 'completed'`.execute(t.db);
    return rows[0]?.n;
  };

  it("no read of the run's verdicts of its own once the worker knows the run; another's verdict is heard before a window and after it", async () => {
    const { runId, job } = await startSyncRun(t, { startDay: '2026-03-01', today: '2026-03-10' });
    const logs = capturingLogger('warn');
    const stop = new AbortController();
    const worker = startWorker(t, boss, {
      logger: logs.logger,
      sources: [simulatorSource(sim)],
      // One lane: its windows one after another.
      workerConcurrency: 1,
      signal: stop.signal,
    });
    try {
      const days = ['2026-03-02', '2026-03-03', '2026-03-04', '2026-03-05'];
      const first = await sendWindowJobs(boss, 'sync', [job(days[0] as string)], TEST_QUEUE_SETTINGS);
      await expect.poll(() => completed(first), { timeout: 10_000 }).toBe(1);
      statements.length = 0;
      const later = await sendWindowJobs(boss, 'sync', days.slice(1).map(job), TEST_QUEUE_SETTINGS);
      await expect.poll(() => completed(later), { timeout: 10_000 }).toBe(3);
      // The first window read before it (its run unknown at the claim); the later ones none.
      expect(statements.filter((s) => VERDICT_READ.test(s))).toEqual([]);

      // Another worker of the run found the reading stale: heard, the reading learned again.
      await sql`insert into queue_run_checks (run_id, source_id, resource, stale_verdicts, last_stale_at)
        values (${runId}, 'main', 'feedback', 1, now())
        on conflict (run_id, source_id, resource) do update set stale_verdicts = 1, last_stale_at = now()`.execute(
        t.db,
      );
      const stale = await sendWindowJobs(boss, 'sync', [job('2026-03-06')], TEST_QUEUE_SETTINGS);
      await expect.poll(() => completed(stale), { timeout: 10_000 }).toBe(1);
      const heard = () =>
        logs.lines.filter((l) =>
          String(l.msg).startsWith("a worker found a reading of the source's server stale"),
        ).length;
      expect(heard()).toBe(1);

      // Told while a window runs (its claim read none): heard after it, as the slot is let go.
      const during = await sendWindowJobs(boss, 'sync', [job('2026-03-07')], TEST_QUEUE_SETTINGS);
      await expect.poll(() => jobState(t, during[0]), { timeout: 10_000, interval: 20 }).toBe('active');
      await sql`update queue_run_checks set stale_verdicts = 2, last_stale_at = now()
                 where run_id = ${runId} and source_id = 'main' and resource = 'feedback'`.execute(t.db);
      await expect.poll(() => completed(during), { timeout: 10_000 }).toBe(1);
      expect(heard()).toBe(2);

      // Another resource's reading of the source found stale: a deploy changes the server, not one
      // endpoint, and this one's canary may have come from the new deploy: heard here too.
      await sql`insert into queue_run_checks (run_id, source_id, resource, stale_verdicts, last_stale_at)
        values (${runId}, 'main', 'survey', 1, now())`.execute(t.db);
      const other = await sendWindowJobs(boss, 'sync', [job('2026-03-08')], TEST_QUEUE_SETTINGS);
      await expect.poll(() => completed(other), { timeout: 10_000 }).toBe(1);
      expect(heard()).toBe(3);
    } finally {
      stop.abort();
      await worker;
    }
  }, 30_000);
});
