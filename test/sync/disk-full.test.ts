/**
 * A database whose disk is full refuses the rows a run writes (SQLSTATE 53100, disk_full). The
 * command ends with one line naming the database and the condition, and exit 5 (never "unexpected
 * error" and a stack trace); the run is recorded failed, with why, where the database still takes
 * that write, and the next run once the disk has room loads what was missed.
 *
 * The full disk is played by a trigger on the table the end of a run writes (server_readings),
 * raising the error PostgreSQL raises when it cannot extend a file: the same SQLSTATE and message
 * shape, without filling the machine's disk.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import type { RunSummary } from '../../src/sync/outcomes.js';
import { addDays, todayUtc } from '../../src/time/days.js';
import { cliEnv, runCli } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

const TODAY = todayUtc(new Date());
const FROM = addDays(TODAY, -3);
const TO = addDays(TODAY, -1);
const NO_SPACE = 'could not extend file "base/16384/16500": No space left on device';

describe('a full disk on the database', () => {
  let t: TestDatabase;
  let sim: Simulator;
  let env: Record<string, string>;

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 4, from: FROM, to: TO });
    env = cliEnv({
      DATABASE_URL: t.url,
      INSIGHTS_SCHEMA: t.schema,
      INSIGHTS_API_URL: sim.url,
      INSIGHTS_API_KEY: sim.apiKey,
      INSIGHTS_SOURCE_NAME: 'main',
      INSIGHTS_START_DATE: FROM,
    });
    await sql`create function public.disk_full() returns trigger language plpgsql as $$
      begin raise exception using errcode = 'disk_full', message = ${sql.lit(NO_SPACE)}; end $$`.execute(
      t.db,
    );
    await sql`create trigger disk_full before insert or update on server_readings
      for each row execute function public.disk_full()`.execute(t.db);
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
  });

  it('ends a sync with one line naming the database and the condition, exit 5; the run is recorded failed', async () => {
    const result = await runCli(['sync'], env);
    expect(result.stderr).not.toMatch(/unexpected error|\n\s+at /);
    const last = result.stderr.trimEnd().split('\n').at(-1) ?? '';
    const where = new URL(t.url);
    expect(last).toBe(
      `insights-sync: the database at ${where.host}${where.pathname} cannot do what this command asks: disk full (SQLSTATE 53100: ${NO_SPACE}); free space on the database server's disk (its data directory, WAL or tablespace), then rerun`,
    );
    if (where.password !== '') expect(result.stderr + result.stdout).not.toContain(where.password);
    expect(result.code).toBe(5);

    const runs = await t.db.selectFrom('sync_runs').select(['status', 'error', 'summary']).execute();
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({
      status: 'failed',
      error: `the database failed the run: disk full (SQLSTATE 53100: ${NO_SPACE})`,
    });
    // What it loaded before the refusal is counted, and stays.
    expect(Object.keys(runs[0]?.summary as object)).toEqual(['main']);
  });

  it('a window the database refuses stops the run: no other window is tried, each to fail alike', async () => {
    await sql`create trigger disk_full before insert or update on feedback
      for each row execute function public.disk_full()`.execute(t.db);
    try {
      // A month with items on every day: each window would write.
      const month = await startSimulator({ seed: 4, from: addDays(TODAY, -30), to: TO });
      const result = await runCli(
        ['backfill', '--from', addDays(TODAY, -30), '--to', TO, '--resources', 'feedback'],
        {
          ...env,
          INSIGHTS_API_URL: month.url,
          INSIGHTS_API_KEY: month.apiKey,
          INSIGHTS_CONCURRENCY: '1',
          LOG_FORMAT: 'json',
        },
      ).finally(() => month.stop());
      expect(result.code, result.stderr).toBe(5);
      expect(result.stderr.trimEnd().split('\n').at(-1)).toContain(
        'cannot do what this command asks: disk full',
      );
      const failures = result.stderr.split('\n').filter((line) => line.includes('window failed'));
      // The windows already in flight when the first was refused, no more.
      expect(failures.length).toBeGreaterThanOrEqual(1);
      expect(failures.length).toBeLessThanOrEqual(2);
      const run = await t.db
        .selectFrom('sync_runs')
        .select(['status', 'summary'])
        .orderBy('run_id', 'desc')
        .executeTakeFirstOrThrow();
      const feedback = (run.summary as RunSummary).main?.feedback;
      expect(run.status).toBe('failed');
      expect(feedback).toMatchObject({ windows: 30, failedWindows: failures.length });
      expect(feedback?.skippedWindows).toBeGreaterThanOrEqual(25);
    } finally {
      await sql`drop trigger disk_full on feedback`.execute(t.db);
    }
  });

  it('status shows the run failed with why; the next run, with room again, ends ok', async () => {
    const status = await runCli(['status', '--json'], env);
    const report = JSON.parse(status.stdout) as { runs: { status: string; error: string | null }[] };
    expect(report.runs.map((r) => r.status)).toEqual(['failed', 'failed']);
    expect(report.runs[0]?.error).toContain('disk full');

    await sql`drop trigger disk_full on server_readings`.execute(t.db);
    const again = await runCli(['sync'], env);
    expect(again.code, again.stderr).toBe(0);
    const statuses = await t.db.selectFrom('sync_runs').select('status').orderBy('run_id').execute();
    expect(statuses.map((r) => r.status)).toEqual(['failed', 'failed', 'ok']);
  });
});
