import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { addDays, todayUtc } from '../../src/time/days.js';
import { cliEnv, runCli, startCli } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { truthItems, warehouseItems } from '../helpers/warehouse-truth.js';

// The CLI runs on the real clock: the simulated range ends yesterday.
const TODAY = todayUtc(new Date());
const FROM = addDays(TODAY, -12);
const TO = addDays(TODAY, -1);

describe('insights-sync CLI', () => {
  let t: TestDatabase;
  let sim: Simulator;
  let env: Record<string, string>;

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 21, from: FROM, to: TO, cap: 4000, latencyMs: 40 });
    env = cliEnv({
      DATABASE_URL: t.url,
      INSIGHTS_API_URL: sim.url,
      INSIGHTS_API_KEY: sim.apiKey,
      INSIGHTS_SOURCE_NAME: 'main',
    });
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
  });

  it('has --help on every command', async () => {
    for (const command of [[], ['migrate'], ['sync'], ['backfill'], ['status'], ['simulate']]) {
      const result = await runCli([...command, '--help'], env);
      expect(result.code, command.join(' ')).toBe(0);
      expect(result.stdout).toMatch(/^Usage: insights-sync/);
    }
  });

  it('names a bad setting and what it expects, not its value, before any request', async () => {
    sim.resetStats();
    const result = await runCli(['sync'], {
      ...env,
      INSIGHTS_CONCURRENCY: 'CANARY-many',
      INSIGHTS_LOOKBACK_DAYS: '-1',
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('INSIGHTS_CONCURRENCY: an integer 1-64');
    expect(result.stderr).toContain('INSIGHTS_LOOKBACK_DAYS');
    expect(result.stderr).not.toContain('CANARY');
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(sim.stats().requests).toBe(0);
  });

  it('a rejected key exits 3 with one line naming the source and its base URL, and never prints the key', async () => {
    const result = await runCli(['sync'], { ...env, INSIGHTS_API_KEY: 'CANARY-wrong-key' });
    expect(result.code).toBe(3);
    expect(result.stderr).toContain(`API key rejected by ${sim.url} for source main`);
    expect(`${result.stdout}${result.stderr}`).not.toContain('CANARY');
  });

  it('rejects a backfill range given backwards', async () => {
    const result = await runCli(['backfill', '--from', TO, '--to', FROM], env);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`--from ${TO} is after --to ${FROM}`);
  });

  it('a backfill killed with SIGKILL mid-flight leaves no gap behind its watermark; the re-run completes it', async () => {
    const args = ['backfill', '--from', FROM, '--to', TO, '--resources', 'feedback,survey,recordings'];
    const killed = startCli(args, { ...env, INSIGHTS_CONCURRENCY: '2' });
    // Kill once some windows have committed, while others are in flight.
    await expect
      .poll(
        async () => {
          const row = await sql<{ n: number }>`select count(*)::int as n from sync_windows`
            .execute(t.db)
            .catch(() => ({ rows: [{ n: 0 }] }));
          return row.rows[0]?.n ?? 0;
        },
        { timeout: 20_000, interval: 20 },
      )
      .toBeGreaterThanOrEqual(6);
    killed.child.kill('SIGKILL');
    const result = await killed.done;
    expect(result.signal).toBe('SIGKILL');

    // One snapshot for both: the killed process's last COMMIT may still land (its backend outlives
    // it), and read apart, a window missed by the first read could show in the second's watermark.
    const { windows, marks } = await t.db
      .transaction()
      .setIsolationLevel('repeatable read')
      .execute(async (trx) => ({
        windows: await trx.selectFrom('sync_windows').select(['resource', 'day', 'status']).execute(),
        marks: await trx.selectFrom('watermarks').select(['resource', 'day']).execute(),
      }));
    expect(windows.length).toBeLessThan(36);
    for (const mark of marks) {
      if (mark.day === null) continue;
      // Every day from the start through the watermark is committed as done.
      for (let day = FROM; day <= mark.day; day = addDays(day, 1)) {
        expect(
          windows.some((w) => w.resource === mark.resource && w.day === day && w.status === 'done'),
          `${mark.resource} ${day}`,
        ).toBe(true);
      }
    }

    const rerun = await runCli(args, env);
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(await warehouseItems(t, 'main')).toEqual(truthItems(sim.truth()));
    const after = await t.db.selectFrom('watermarks').select('day').execute();
    expect(after.map((m) => m.day)).toEqual([TO, TO, TO]);
  });

  it('status prints the watermarks and exits 0 when all is well; --json for scripts', async () => {
    const human = await runCli(['status'], env);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(new RegExp(`main\\s+feedback\\s+${TO}`));
    const json = await runCli(['status', '--json'], env);
    const report = JSON.parse(json.stdout) as {
      healthy: boolean;
      resources: { resource: string; watermark: string | null }[];
    };
    expect(report.healthy).toBe(true);
    expect(report.resources.find((r) => r.resource === 'survey')?.watermark).toBe(TO);
  });
});
