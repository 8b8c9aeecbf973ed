/**
 * The server ends the run lock's session while a run goes on (an operator following the README's
 * troubleshooting for a stuck lock: `pg_terminate_backend`). The lock is gone, so the run stops
 * taking windows and records itself; the command ends with exit 5, the code of a database that
 * failed it, and one line that names the database (never its password) and the lost lock: not
 * 130, which says an operator pressed Ctrl+C.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { addDays, todayUtc } from '../../src/time/days.js';
import { cliEnv, runCli, startCli } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

const TODAY = todayUtc(new Date());
const FROM = addDays(TODAY, -40);
const TO = addDays(TODAY, -1);

describe("a run whose lock's connection the server ends", () => {
  let t: TestDatabase;
  let sim: Simulator;

  beforeAll(async () => {
    t = await createTestDatabase();
    // Slow answers: the run is far from done when its lock's session is ended.
    sim = await startSimulator({ seed: 3, from: FROM, to: TO, cap: 4000, latencyMs: 150 });
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
  });

  /** The backend of the session holding the run lock (application_name `insights-sync pid=N ...`). */
  async function lockSession(): Promise<number | undefined> {
    const { rows } = await sql<{ pid: number }>`select pid from pg_stat_activity
      where datname = current_database() and application_name like 'insights-sync pid=%'`.execute(t.db);
    return rows[0]?.pid;
  }

  it('ends with exit 5 and one line naming the database and the lost lock; the run is recorded', async () => {
    const url = new URL(t.url);
    const env = cliEnv({
      DATABASE_URL: t.url,
      INSIGHTS_SCHEMA: t.schema,
      INSIGHTS_API_URL: sim.url,
      INSIGHTS_API_KEY: sim.apiKey,
      INSIGHTS_SOURCE_NAME: 'main',
      INSIGHTS_CONCURRENCY: '2',
    });
    const run = startCli(['backfill', '--from', FROM, '--to', TO, '--resources', 'feedback,recordings'], env);
    await expect
      .poll(async () => (await t.db.selectFrom('sync_windows').select('day').execute()).length, {
        timeout: 30_000,
        interval: 50,
      })
      .toBeGreaterThanOrEqual(3);
    const pid = await lockSession();
    expect(pid).toBeDefined();
    await sql`select pg_terminate_backend(${pid}::int)`.execute(t.db);
    const result = await run.done;

    expect(result.stderr).not.toMatch(/unexpected error|\n\s+at /);
    const last = result.stderr.trimEnd().split('\n').at(-1) ?? '';
    expect(last).toMatch(
      new RegExp(
        `^insights-sync: lost the connection to the database at ${url.host.replace(/\./g, '\\.')}${url.pathname} that held the run lock on schema ${t.schema} \\(`,
      ),
    );
    expect(last).not.toMatch(/interrupted: received|Ctrl\+C/);
    if (url.password !== '') expect(result.stderr + result.stdout).not.toContain(url.password);
    expect(result.code).toBe(5);

    // The run recorded itself: interrupted, with why; what it committed stays.
    const status = await runCli(['status', '--json'], env);
    const report = JSON.parse(status.stdout) as { runs: { status: string; error: string | null }[] };
    expect(report.runs[0]?.status).toBe('interrupted');
    expect(report.runs[0]?.error).toContain('lost the lock on schema');
  }, 120_000);
});
