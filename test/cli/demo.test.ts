import { spawn } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliResult, cliEnv, collectOutput, startCli } from '../helpers/cli.js';
import { freePort } from '../helpers/free-port.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** `npm run demo` exactly as the README says, from the repository root. */
function npmRunDemo(env: Record<string, string>): Promise<CliResult> {
  const child = spawn('npm', ['run', 'demo'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  return collectOutput(child);
}

/** The rows of the summary table printed after "heading" (the backfill's or the sync's). */
function summaryRows(stdout: string, heading: string): string[][] {
  const lines = stdout.slice(stdout.indexOf(heading)).split('\n').slice(1);
  const end = lines.findIndex((line) => !/^(source|demo)\s/.test(line));
  return lines.slice(1, end).map((line) => line.trim().split(/\s{2,}/));
}

describe('npm run demo, on a machine without PostgreSQL (DATABASE_URL unset)', () => {
  let dataDir: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'insights-demo-'));
    // As root, PostgreSQL runs as the postgres user, which must reach the data directory.
    await chmod(dataDir, 0o755);
    // No DATABASE_URL (cliEnv passes nothing of the test's environment): the embedded default.
    env = cliEnv({
      INSIGHTS_DATA_DIR: join(dataDir, 'postgres'),
      INSIGHTS_EMBEDDED_PORT: String(await freePort()),
    });
  });
  afterAll(() => rm(dataDir, { recursive: true, force: true }));

  it('backfills, syncs, prints a summary per resource and two queries with their results, and how to connect', async () => {
    const result = await npmRunDemo(env);
    expect(result.code, result.stderr).toBe(0);
    const backfill = summaryRows(result.stdout, '2. Backfill');
    expect(backfill.map((row) => row[1])).toEqual([
      'feedback',
      'survey',
      'recordings',
      'abtesting',
      'personalization',
      'heatmaps',
    ]);
    // Columns: source, resource, windows run, failed, not run, fetched, inserted, updated, ...
    expect(backfill.find((row) => row[1] === 'feedback')?.slice(2, 5)).toEqual(['30', '0', '0']);
    // Every resource read something. A day window's own inserted may be 0 on a first backfill: its
    // items can all have been stored earlier, from a neighbouring day's answer (written counts them).
    expect(backfill.every((row) => Number(row[5]) > 0)).toBe(true);
    const written = Number(/^totals: .* written=(\d+) /m.exec(result.stdout)?.[1]);
    const fetched = backfill.slice(0, 3).reduce((n, row) => n + Number(row[5]), 0);
    expect(written).toBeGreaterThan(fetched / 2);
    expect(result.stdout).toMatch(/run 1: ok/);
    expect(result.stdout).toMatch(/run 2: ok/);
    expect(result.stdout).toMatch(
      /5\. A\/B tests: complete \/ total per variant:[\s\S]*test_name\s+variant\s+complete\s+total\s+complete_pct\n\S/,
    );
    expect(result.stdout).toMatch(
      /6\. Feedback of the last 7 days[\s\S]*day\s+feedback\s+avg_rating\s+visitors\n\d{4}-\d\d-\d\d\s+\d+/,
    );
    expect(result.stdout).toMatch(
      new RegExp(
        `Connect with:\n    PGPASSWORD="\\$\\(cat '[^']+insights-sync\\.password'\\)" psql 'postgres://postgres@127\\.0\\.0\\.1:${env.INSIGHTS_EMBEDDED_PORT}/postgres'`,
      ),
    );
    expect(result.stderr).toContain('DATABASE_URL is not set: embedded PostgreSQL');
  }, 120_000); // npm, tsx, initdb of a new cluster and a 30-day backfill, beside other test files

  it('runs again without error and changes nothing; with --keep-running, psql can connect until Ctrl+C', async () => {
    const demo = startCli(['demo', '--keep-running'], env);
    let stdout = '';
    demo.child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    await expect.poll(() => stdout, { timeout: 60_000, interval: 100 }).toContain('stays up until Ctrl+C');
    // The password is in its file, never in the output.
    const [, passwordFile = '', url = ''] =
      /PGPASSWORD="\$\(cat '([^']+)'\)" psql '([^']+)'/.exec(stdout) ?? [];
    const withPassword = new URL(url);
    withPassword.password = encodeURIComponent((await readFile(passwordFile, 'utf8')).trim());
    const client = new pg.Client({ connectionString: withPassword.toString() });
    await client.connect();
    try {
      const runs = await client.query<{ trigger: string; status: string }>(
        'select trigger, status from insights_state.sync_runs order by run_id',
      );
      expect(runs.rows.map((r) => `${r.trigger}:${r.status}`)).toEqual([
        'backfill:ok',
        'sync:ok',
        'backfill:ok',
        'sync:ok',
      ]);
    } finally {
      await client.end();
    }
    demo.child.kill('SIGINT');
    const result = await demo.done;
    expect(result.code, result.stderr).toBe(0);
    // Idempotent: the second backfill inserted and updated nothing.
    const backfill = summaryRows(result.stdout, '2. Backfill');
    expect(backfill).toHaveLength(6);
    expect(backfill.map((row) => [row[6], row[7]])).toEqual(Array(6).fill(['0', '0']));
  }, 90_000);
});
