import { sql } from 'kysely';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log/logger.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { SAME_SIGNAL_MS, shutdownSignal } from '../../src/sync/shutdown.js';
import { addDays, todayUtc } from '../../src/time/days.js';
import { type CliResult, cliEnv, runCli, startCli } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { truthItems, warehouseItems } from '../helpers/warehouse-truth.js';

// The CLI runs on the real clock: the simulated range ends yesterday.
const TODAY = todayUtc(new Date());
const FROM = addDays(TODAY, -12);
const TO = addDays(TODAY, -1);
const BACKFILL = ['backfill', '--from', FROM, '--to', TO, '--resources', 'feedback,survey,recordings'];

/** Sends `signal` and measures how long the process takes to exit. */
async function stop(
  cli: ReturnType<typeof startCli>,
  signal: NodeJS.Signals,
): Promise<CliResult & { ms: number }> {
  const sent = Date.now();
  cli.child.kill(signal);
  const result = await cli.done;
  return { ...result, ms: Date.now() - sent };
}

/** Connections of the CLI waiting on the test's table lock: windows stuck in flight. */
async function windowsStuck(t: TestDatabase): Promise<number> {
  const rows = await sql<{ n: number }>`
    select count(*)::int as n from pg_stat_activity
     where datname = current_database() and wait_event_type = 'Lock' and application_name = 'insights-sync'`.execute(
    t.db,
  );
  return rows.rows[0]?.n ?? 0;
}

/** Sessions of the CLI still open on the test database. */
async function cliSessions(t: TestDatabase): Promise<number> {
  const rows = await sql<{ n: number }>`
    select count(*)::int as n from pg_stat_activity
     where datname = current_database() and application_name = 'insights-sync'`.execute(t.db);
  return rows.rows[0]?.n ?? 0;
}

async function lastRun(t: TestDatabase) {
  return t.db
    .selectFrom('sync_runs')
    .selectAll()
    .orderBy('run_id', 'desc')
    .limit(1)
    .executeTakeFirstOrThrow();
}

/** Rows in each items table per UTC day. */
async function itemsPerDay(t: TestDatabase): Promise<Map<string, number>> {
  const rows = await sql<{ resource: string; day: string; n: number }>`
    select 'feedback' as resource, (dt at time zone 'UTC')::date::text as day, count(*)::int as n from feedback group by 2
    union all
    select 'survey', (dt at time zone 'UTC')::date::text, count(*)::int from survey_answers group by 2
    union all
    select 'recordings', (dt at time zone 'UTC')::date::text, count(*)::int from recordings group by 2`.execute(
    t.db,
  );
  return new Map(rows.rows.map((r) => [`${r.resource}/${r.day}`, r.n]));
}

// Each test starts the CLI and waits for windows in flight: on a machine busy with other test
// files, longer than the default 30 s.
describe('SIGTERM and SIGINT', () => {
  let t: TestDatabase;
  let sim: Simulator;
  let env: Record<string, string>;

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 41, from: FROM, to: TO, cap: 4000, latencyMs: 150 });
    env = cliEnv({
      DATABASE_URL: t.url,
      INSIGHTS_API_URL: sim.url,
      INSIGHTS_API_KEY: sim.apiKey,
      INSIGHTS_SOURCE_NAME: 'main',
      INSIGHTS_CONCURRENCY: '2',
      INSIGHTS_SHUTDOWN_GRACE_MS: '10000',
    });
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
  });

  it('during a backfill: the windows in flight end, the run is recorded interrupted, the ledger matches the tables, and the next run completes the range', async () => {
    const backfill = startCli(BACKFILL, env);
    await expect
      .poll(
        async () =>
          (await sql<{ n: number }>`select count(*)::int as n from sync_windows`.execute(t.db)).rows[0]?.n,
        { timeout: 20_000, interval: 20 },
      )
      .toBeGreaterThanOrEqual(6);
    const result = await stop(backfill, 'SIGTERM');
    expect(result.code, result.stderr).toBe(130);
    expect(result.ms).toBeLessThan(8000); // inside the 10 s grace period, with room for a loaded machine
    expect(result.stdout).toMatch(/run \d+: interrupted/);

    const run = await lastRun(t);
    expect(run).toMatchObject({ trigger: 'backfill', status: 'interrupted' });
    expect(run.finished_at).not.toBeNull();
    const summary = run.summary as Record<
      string,
      Record<string, { windows: number; skippedWindows: number }>
    >;
    expect(summary.main?.feedback?.skippedWindows).toBeGreaterThan(0);

    // Every window in the ledger is done, with exactly the day's items. Other days hold at most
    // what a neighbour's answer brought along (every item returned is stored), never more.
    const ledger = await t.db.selectFrom('sync_windows').select(['resource', 'day', 'status']).execute();
    expect(ledger.length).toBeLessThan(36);
    expect(ledger.every((w) => w.status === 'done')).toBe(true);
    const truth = truthItems(sim.truth());
    const truthOn = (key: string) => {
      const [resource, day] = key.split('/') as [keyof typeof truth, string];
      return truth[resource].filter((item) => item.dt.slice(0, 10) === day).length;
    };
    const stored = await itemsPerDay(t);
    for (const w of ledger) {
      const key = `${w.resource}/${w.day}`;
      expect(stored.get(key) ?? 0, key).toBe(truthOn(key));
    }
    for (const [key, count] of stored) expect(count, key).toBeLessThanOrEqual(truthOn(key));

    sim.setOptions({ latencyMs: 0 });
    const rerun = await runCli(BACKFILL, env);
    sim.setOptions({ latencyMs: 150 });
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(await warehouseItems(t, 'main')).toEqual(truth);
    const marks = await t.db.selectFrom('watermarks').select('day').execute();
    expect(marks.map((m) => m.day)).toEqual([TO, TO, TO]);
  }, 90_000);

  it('exits when the grace period runs out even if windows are stuck, rolling them back and recording the run as interrupted', async () => {
    await sql`truncate sync_windows, watermarks, feedback, survey_answers, recordings`.execute(t.db);
    // Every window's load waits on this lock: in flight, unable to commit.
    const blocker: pg.PoolClient = await t.pool.connect();
    await blocker.query('begin');
    await blocker.query('lock table feedback in access exclusive mode');
    try {
      const backfill = startCli([...BACKFILL.slice(0, -1), 'feedback'], {
        ...env,
        INSIGHTS_SHUTDOWN_GRACE_MS: '2000',
      });
      await expect.poll(() => windowsStuck(t), { timeout: 20_000, interval: 20 }).toBeGreaterThanOrEqual(2);
      const result = await stop(backfill, 'SIGTERM');
      expect(result.code, result.stderr).toBe(130);
      expect(result.ms).toBeGreaterThan(1000);
      // The grace period, not the 10 s default, with room for a loaded machine's process exit.
      expect(result.ms).toBeLessThan(2000 + 4000);
      expect(result.stderr).toContain('the shutdown grace period of 2000 ms ran out');
      // The sessions of the windows stuck in flight are ended with the process: none is left to
      // take the lock once it is free and commit a window after the exit.
      // The server ends a session once it sees its socket closed: a moment after the exit.
      await expect.poll(() => cliSessions(t), { timeout: 5_000, interval: 50 }).toBe(0);
    } finally {
      await blocker.query('rollback');
      blocker.release();
    }
    const run = await lastRun(t);
    expect(run).toMatchObject({ trigger: 'backfill', status: 'interrupted' });
    expect(run.error).toBe(
      'the shutdown grace period of 2000 ms ran out: windows in flight were rolled back',
    );
    // Nothing half-written: no item; in the ledger, only days without feedback (they wrote no row).
    const ledger = await t.db.selectFrom('sync_windows').select(['item_count']).execute();
    expect(ledger.filter((w) => w.item_count > 0)).toEqual([]);
    expect(await itemsPerDay(t)).toEqual(new Map());
  }, 90_000);

  it('a second signal exits at once', async () => {
    const blocker: pg.PoolClient = await t.pool.connect();
    await blocker.query('begin');
    await blocker.query('lock table feedback in access exclusive mode');
    try {
      // A grace period far longer than any exit on a loaded machine: only the second signal ends it.
      const backfill = startCli([...BACKFILL.slice(0, -1), 'feedback'], {
        ...env,
        INSIGHTS_SHUTDOWN_GRACE_MS: '60000',
      });
      await expect.poll(() => windowsStuck(t), { timeout: 20_000, interval: 20 }).toBeGreaterThanOrEqual(2);
      backfill.child.kill('SIGTERM');
      await new Promise((resolve) => setTimeout(resolve, 300));
      const result = await stop(backfill, 'SIGINT');
      expect(result.code, result.stderr).toBe(130);
      expect(result.ms).toBeLessThan(30_000);
      expect(result.stderr).toContain('a second SIGINT');
      // The server ends a session once it sees its socket closed: a moment after the exit.
      await expect.poll(() => cliSessions(t), { timeout: 5_000, interval: 50 }).toBe(0);
    } finally {
      await blocker.query('rollback');
      blocker.release();
    }
    expect(await lastRun(t)).toMatchObject({ status: 'interrupted' });
  }, 90_000);
});

describe('a signal heard twice', () => {
  /** The SIGINT handler shutdownSignal installs, called directly: no signal reaches the test run. */
  function installed() {
    const before = new Set(process.listeners('SIGINT'));
    const exits: number[] = [];
    const shutdown = shutdownSignal({
      logger: silentLogger(),
      graceMs: 60_000,
      exit: (code) => exits.push(code),
    });
    const handler = process.listeners('SIGINT').find((listener) => !before.has(listener));
    if (handler === undefined) throw new Error('shutdownSignal installed no SIGINT handler');
    const hear = (signal: NodeJS.Signals = 'SIGINT') => (handler as (signal: NodeJS.Signals) => void)(signal);
    return { shutdown, exits, hear };
  }

  it("is one signal when the copies come back to back (a busy loop hears Ctrl+C and the launcher's forwarded copy at once)", async () => {
    const { shutdown, exits, hear } = installed();
    try {
      hear();
      hear();
      expect(shutdown.signal.aborted).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(exits).toEqual([]);
    } finally {
      shutdown.dispose();
    }
  });

  it('is a second signal, which exits at once, when it is another signal, however soon (a SIGTERM, then a SIGINT, both heard late)', async () => {
    const { shutdown, exits, hear } = installed();
    try {
      hear('SIGTERM');
      hear('SIGINT');
      await expect.poll(() => exits, { timeout: 5_000, interval: 10 }).toEqual([130]);
    } finally {
      shutdown.dispose();
    }
  });

  it(`is a second signal, which exits at once, when it comes ${SAME_SIGNAL_MS} ms or more after the first`, async () => {
    const { shutdown, exits, hear } = installed();
    try {
      hear();
      await new Promise((resolve) => setTimeout(resolve, SAME_SIGNAL_MS + 20));
      hear();
      await expect.poll(() => exits, { timeout: 5_000, interval: 10 }).toEqual([130]);
    } finally {
      shutdown.dispose();
    }
  });
});
