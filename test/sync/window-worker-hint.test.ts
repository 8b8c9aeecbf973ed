import { sql } from 'kysely';
import type { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queueSchema } from '../../src/db/bookkeeping.js';
import { sendWindowJobs } from '../../src/queue/window-queue.js';
import type { Simulator } from '../../src/simulator/server.js';
import { BUSY, BUSY_RANGE, learnedBusyDay } from '../helpers/busy-day.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { openMainQueue, startSyncRun, startWorker, TEST_QUEUE_SETTINGS } from '../helpers/queue-harness.js';
import { simulatorSource } from '../helpers/sync-harness.js';

/**
 * A queued window of a day earlier runs stored many items of is first asked above them, as in
 * process (test/sync/limit-hint.test.ts): the job carries the planner's hint (itemsBefore), and the
 * worker asks the day once where, without it, it asks with the first limit and again.
 */

describe("a worker's window of a busy day", () => {
  let t: TestDatabase;
  let sim: Simulator;
  let boss: PgBoss;
  let busyDay: string;

  beforeAll(async () => {
    t = await createTestDatabase();
    ({ sim, busyDay } = await learnedBusyDay(t));
    boss = await openMainQueue(t, { slots: 2 });
  });
  afterAll(async () => {
    await boss?.stop({ graceful: false, timeout: 1000 });
    await sim?.stop();
    await t?.drop();
  });

  /** The requests a completed job's window made, from the outcome the worker handed back. */
  const requestsOf = async (id: string | undefined) => {
    const { rows } = await sql<{ state: string; requests: number | null }>`
      select state::text as state, (output -> 'outcome' ->> 'requests')::int as requests
        from ${sql.id(queueSchema(t.schema), 'job')} where id = ${id}`.execute(t.db);
    const row = rows[0];
    return row?.state === 'completed' ? row.requests : undefined;
  };

  it('asks it once with the hint the job carries, where without it the first answer fills the first limit', async () => {
    const stop = new AbortController();
    const worker = startWorker(t, boss, {
      sources: [simulatorSource(sim)],
      workerConcurrency: 1,
      signal: stop.signal,
    });
    try {
      const runWith = async (itemsBefore: number | undefined) => {
        const { job } = await startSyncRun(t, { startDay: BUSY_RANGE.from, today: '2026-03-20' });
        const data = itemsBefore === undefined ? job(busyDay) : { ...job(busyDay), itemsBefore };
        const [id] = await sendWindowJobs(boss, 'sync', [data], TEST_QUEUE_SETTINGS);
        await expect.poll(() => requestsOf(id), { timeout: 15_000 }).toBeGreaterThan(0);
        return (await requestsOf(id)) as number;
      };
      const without = await runWith(undefined);
      const hinted = await runWith(BUSY);
      expect(hinted).toBe(without - 1);
      const { rows } = await t.pool.query<{ item_count: number; truncated: boolean }>(
        `select item_count, truncated from sync_windows where resource = 'feedback' and day = $1`,
        [busyDay],
      );
      expect(rows).toEqual([{ item_count: BUSY, truncated: false }]);
    } finally {
      stop.abort();
      await worker;
    }
  }, 40_000);
});
