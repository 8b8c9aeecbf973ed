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

  it('status shows the run failed with why; the next run, with room again, ends ok', async () => {
    const status = await runCli(['status', '--json'], env);
    const report = JSON.parse(status.stdout) as { runs: { status: string; error: string | null }[] };
    expect(report.runs[0]).toMatchObject({ status: 'failed' });
    expect(report.runs[0]?.error).toContain('disk full');

    await sql`drop trigger disk_full on server_readings`.execute(t.db);
    const again = await runCli(['sync'], env);
    expect(again.code, again.stderr).toBe(0);
    const statuses = await t.db.selectFrom('sync_runs').select('status').orderBy('run_id').execute();
    expect(statuses.map((r) => r.status)).toEqual(['failed', 'ok']);
  });
});
