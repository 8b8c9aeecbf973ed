/**
 * A queued run's planner waits for its jobs without the run lock, with a heartbeat on
 * its row. The next run to take the lock ends the runs whose process is gone, and only those.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acquireRunLock } from '../../src/db/run-lock.js';
import { RUN_GONE, statusReport } from '../../src/status/status-report.js';
import { beatRun, interruptAbandonedRuns, interruptRun } from '../../src/sync/run-log.js';
import type { DayString } from '../../src/time/days.js';
import { cliEnv, runCli } from '../helpers/cli.js';
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

describe('status of a run marked running', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(() => t.drop());

  const addRun = async (beat: boolean) =>
    (
      await t.db
        .insertInto('sync_runs')
        .values({ trigger: 'backfill', status: 'running', heartbeat_at: beat ? sql<Date>`now()` : null })
        .returning('run_id')
        .executeTakeFirstOrThrow()
    ).run_id;
  const shown = async (runId: number) => {
    const report = await statusReport(t.db, '2026-03-01' as DayString);
    return { run: report.runs.find((r) => r.runId === runId), healthy: report.healthy };
  };

  it('whose process is gone (no run lock, no heartbeat: killed, out of memory) is shown interrupted, and unhealthy', async () => {
    const dead = await addRun(false);
    expect(await shown(dead)).toMatchObject({
      run: { status: 'interrupted', error: RUN_GONE },
      healthy: false,
    });
    await t.db.deleteFrom('sync_runs').where('run_id', '=', dead).execute();
  });

  it('whose process is gone: the command exits 1 and says why, with the next step (text and --json)', async () => {
    const dead = await addRun(false);
    const env = cliEnv({ DATABASE_URL: t.url, INSIGHTS_SCHEMA: t.schema });
    const text = await runCli(['status'], env);
    expect(text.code, text.stderr).toBe(1);
    expect(text.stdout).toContain(
      `needs attention: run ${dead} (backfill) is marked running but its process is gone`,
    );
    expect(text.stdout).toMatch(/^ {2}next: .*the next `insights-sync sync` records it as interrupted/m);
    const json = await runCli(['status', '--json', '--runs', '0'], env);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({
      healthy: false,
      runs: [],
      attention: [{ runId: dead, reason: expect.stringContaining('its process is gone') }],
    });
    await t.db.deleteFrom('sync_runs').where('run_id', '=', dead).execute();
  });

  it('that holds the run lock, or beats (a queued run waiting for its jobs), is shown running', async () => {
    const queued = await addRun(true);
    expect((await shown(queued)).run?.status).toBe('running');
    await t.db.deleteFrom('sync_runs').where('run_id', '=', queued).execute();
    const underLock = await addRun(false);
    const lock = await acquireRunLock({ url: t.url, schema: t.schema });
    try {
      expect((await shown(underLock)).run).toMatchObject({ status: 'running', error: null });
    } finally {
      await lock.release();
    }
  });
});
