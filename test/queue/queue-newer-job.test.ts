import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queueSchema } from '../../src/db/bookkeeping.js';
import { LATEST_MIGRATION } from '../../src/db/migrator.js';
import { CliError } from '../../src/errors.js';
import { jobTooNew, sendWindowJobs, type WindowJob } from '../../src/queue/window-queue.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { openMainQueue, startWorker, TEST_QUEUE_SETTINGS } from '../helpers/queue-harness.js';

/** A worker left behind after an upgrade refuses the jobs of a newer planner, and loses none. */

const NEWER = '9999-from-a-newer-version';

describe('jobTooNew', () => {
  it('refuses a job planned with a newer migration, names both, and lets older and unversioned jobs run', () => {
    expect(jobTooNew({ schema: NEWER }, LATEST_MIGRATION)).toMatch(
      new RegExp(
        `knows migration ${NEWER}, and this worker knows migrations up to ${LATEST_MIGRATION}: upgrade insights-sync`,
      ),
    );
    expect(jobTooNew({ schema: LATEST_MIGRATION }, LATEST_MIGRATION)).toBeUndefined();
    expect(jobTooNew({ schema: '0001-initial' }, LATEST_MIGRATION)).toBeUndefined();
    expect(jobTooNew({}, LATEST_MIGRATION)).toBeUndefined();
  });
});

describe('a worker given a job of a newer planner', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(async () => {
    await t.drop();
  });

  it('fails it back to the queue (retry, with the reason) and stops with exit code 2', async () => {
    // One slot, as the planner makes it before it sends (run-locked.ts).
    const boss = await openMainQueue(t, { slots: 1 });
    try {
      const job: WindowJob = {
        runId: 1,
        source: 'main',
        resource: 'feedback',
        day: '2026-01-01',
        startDay: '2026-01-01',
        today: '2026-02-01',
        schema: NEWER,
      };
      const [id] = await sendWindowJobs(boss, 'sync', [job], TEST_QUEUE_SETTINGS);
      const stop = new AbortController();
      const worker = startWorker(t, boss, {
        // Never asked: the job is refused before any request.
        sources: [{ name: 'main', baseUrl: 'http://127.0.0.1:9', apiKey: 'k' }],
        workerConcurrency: 1,
        signal: stop.signal,
      });
      // Stopped by the refusal alone: nothing aborts `stop`.
      const error = await worker.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(CliError);
      expect((error as CliError).exitCode).toBe(2);
      expect((error as CliError).message).toContain(`knows migration ${NEWER}`);
      const rows = await sql<{ state: string; output: { message?: string } | null }>`
        select state::text as state, output from ${sql.id(queueSchema(t.schema), 'job')} where id = ${id}`.execute(
        t.db,
      );
      expect(rows.rows[0]?.state).toBe('retry');
      expect(rows.rows[0]?.output?.message).toContain('upgrade insights-sync');
      const windows = await sql<{ n: number }>`select count(*)::int as n from sync_windows`.execute(t.db);
      expect(windows.rows[0]?.n).toBe(0);
    } finally {
      await boss.stop({ graceful: false, timeout: 1000 });
    }
  });
});
