/**
 * Issue 14: a queued run's planner waits for its jobs without the run lock, with a heartbeat on
 * its row. The next run to take the lock ends the runs whose process is gone, and only those.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { beatRun, interruptAbandonedRuns, interruptRun } from '../../src/sync/run-log.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

describe('runs left running', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(() => t.drop());

  const addRun = async (heartbeat: 'none' | 'fresh' | 'stale') => {
    const row = await t.db
      .insertInto('sync_runs')
      .values({
        trigger: 'backfill',
        status: 'running',
        heartbeat_at:
          heartbeat === 'none'
            ? null
            : heartbeat === 'fresh'
              ? sql<Date>`now()`
              : sql<Date>`now() - interval '31 seconds'`,
      })
      .returning('run_id')
      .executeTakeFirstOrThrow();
    return row.run_id;
  };
  const statusOf = async (runId: number) =>
    (
      await t.db
        .selectFrom('sync_runs')
        .select('status')
        .where('run_id', '=', runId)
        .executeTakeFirstOrThrow()
    ).status;

  it('are ended when they never beat (a run that held the lock) or their last beat is older than 30 s; a fresh beat keeps a waiting planner running', async () => {
    const underLock = await addRun('none');
    const waiting = await addRun('fresh');
    const gone = await addRun('stale');
    const ended = await interruptAbandonedRuns(t.db, 'killed');
    expect(ended.sort()).toEqual([underLock, gone].sort());
    expect(await statusOf(waiting)).toBe('running');
  });

  it('a beat renews a stale heartbeat', async () => {
    const run = await addRun('stale');
    await beatRun(t.db, run);
    expect(await interruptAbandonedRuns(t.db, 'killed')).not.toContain(run);
  });

  it("a forced exit ends its own run only, not another planner's", async () => {
    const mine = await addRun('fresh');
    const other = await addRun('fresh');
    await interruptRun(t.db, mine, 'forced exit', { windows: 0 });
    expect(await statusOf(mine)).toBe('interrupted');
    expect(await statusOf(other)).toBe('running');
  });
});
