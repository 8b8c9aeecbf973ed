/**
 * A run that loses its database mid-backfill (the connection cut, new ones refused) ends with one
 * line naming the database and exit 5, the code of a database that cannot be reached, never a
 * stack trace. Nothing can be recorded while the database is gone: status shows the run
 * interrupted (its process is gone) and says so, and the next run records it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { addDays, todayUtc } from '../../src/time/days.js';
import { cliEnv, runCli, startCli } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';

const TODAY = todayUtc(new Date());
const FROM = addDays(TODAY, -30);
const TO = addDays(TODAY, -1);

describe('a backfill whose database connection is cut', () => {
  let t: TestDatabase;
  let proxy: TcpProxy;
  let sim: Simulator;

  beforeAll(async () => {
    t = await createTestDatabase();
    const target = new URL(t.url);
    proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    // Slow enough answers that the cut comes with most of the range still to do.
    sim = await startSimulator({ seed: 3, from: FROM, to: TO, cap: 4000, latencyMs: 150 });
  });
  afterAll(async () => {
    await sim.stop();
    await proxy.close();
    await t.drop();
  });

  it('ends with one line and exit 5; status then shows the run interrupted and says why', async () => {
    const env = cliEnv({
      DATABASE_URL: proxy.urlFor(t.url),
      INSIGHTS_SCHEMA: t.schema,
      INSIGHTS_API_URL: sim.url,
      INSIGHTS_API_KEY: sim.apiKey,
      INSIGHTS_SOURCE_NAME: 'main',
      INSIGHTS_CONCURRENCY: '2',
    });
    const run = startCli(['backfill', '--from', FROM, '--to', TO], env);
    await expect
      .poll(async () => (await t.db.selectFrom('sync_windows').select('day').execute()).length, {
        timeout: 30_000,
        interval: 50,
      })
      .toBeGreaterThanOrEqual(3);
    await proxy.cut();
    const result = await run.done;
    await proxy.restore();

    expect(result.stderr).not.toMatch(/unexpected error|\n\s+at /);
    // The CLI's line is the last: every log line of the run came before it.
    const last = result.stderr.trimEnd().split('\n').at(-1) ?? '';
    expect(last).toMatch(
      new RegExp(
        `^insights-sync: lost the connection to the database at 127\\.0\\.0\\.1:${proxy.port}/[^ ]+ \\(`,
      ),
    );
    expect(result.code).toBe(5);

    const status = await runCli(['status', '--json'], { ...env, DATABASE_URL: t.url });
    expect(status.code).toBe(1);
    const report = JSON.parse(status.stdout) as {
      runs: { runId: number; status: string }[];
      attention: { runId?: number; reason: string }[];
    };
    const runId = report.runs[0]?.runId;
    expect(report.runs[0]?.status).toBe('interrupted');
    expect(report.attention.some((a) => a.runId === runId)).toBe(true);
  }, 120_000);
});
