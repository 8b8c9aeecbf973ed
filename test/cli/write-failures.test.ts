import { spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { addDays, todayUtc } from '../../src/time/days.js';
import { type CliResult, cliEnv, collectOutput, runCli } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

/**
 * Every write a command makes that fails, standard output included, ends the command in one line
 * on stderr with exit code 6 (README "Exit codes"), never an 'error' event's stack trace. /dev/full
 * fails every write with ENOSPC: a cron job's `> file` on a full disk.
 */

const TODAY = todayUtc(new Date());
const WRITE_FAILED = 6;

/** The CLI with its standard output on /dev/full. */
async function toFullDisk(args: string[], env: Record<string, string>): Promise<CliResult> {
  const full = openSync('/dev/full', 'w');
  try {
    const child = spawn(process.execPath, [inject('testCliBin'), ...args], {
      env,
      stdio: ['ignore', full, 'pipe'],
    });
    return await collectOutput(child);
  } finally {
    closeSync(full);
  }
}

/** Exit code 6 and one line on stderr (LOG_LEVEL=error: the CLI's own line only), naming `what`. */
function endsInOneLine(result: CliResult, what: string): void {
  expect(result.code, result.stderr).toBe(WRITE_FAILED);
  expect(result.stderr).not.toMatch(/\n\s+at /);
  expect(result.stderr.trimEnd().split('\n')).toEqual([expect.stringContaining(`cannot write ${what}: `)]);
}

describe('a write that fails', () => {
  let t: TestDatabase;
  let sim: Simulator;
  let env: Record<string, string>;
  let dir: string;

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 7, from: addDays(TODAY, -3), to: addDays(TODAY, -1) });
    env = cliEnv({
      DATABASE_URL: t.url,
      INSIGHTS_API_URL: sim.url,
      INSIGHTS_API_KEY: sim.apiKey,
      INSIGHTS_START_DATE: addDays(TODAY, -3),
      LOG_LEVEL: 'error',
    });
    dir = mkdtempSync(path.join(tmpdir(), 'insights-write-'));
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('status > /dev/full: exit 6, one line', async () => {
    endsInOneLine(await toFullDisk(['status'], env), 'standard output');
  }, 60_000);

  it('sync > /dev/full: the run loads, then exit 6, one line', async () => {
    endsInOneLine(await toFullDisk(['sync'], env), 'standard output');
    const runs = await t.pool.query<{ status: string }>('select status from sync_runs order by run_id');
    expect(runs.rows.map((r) => r.status)).toEqual(['ok']);
  }, 90_000);

  it('dbt-sources --out /dev/full and report --out /dev/full: the same code and line as stdout', async () => {
    endsInOneLine(await runCli(['dbt-sources', '--out', '/dev/full'], env), '/dev/full');
    endsInOneLine(await runCli(['report', '--out', '/dev/full'], env), '/dev/full');
  }, 90_000);

  it('a metrics file that cannot be written: the run loads and is recorded, then exit 6 naming the file', async () => {
    const metricsFile = path.join(dir, 'missing', 'insights.prom');
    const result = await runCli(['sync'], { ...env, INSIGHTS_METRICS_FILE: metricsFile });
    expect(result.code, result.stderr).toBe(WRITE_FAILED);
    expect(result.stderr).not.toMatch(/\n\s+at /);
    const lines = result.stderr.trimEnd().split('\n');
    expect(lines.at(-1)).toMatch(
      /^insights-sync: cannot write the metrics file \(INSIGHTS_METRICS_FILE; run \d+ is loaded and recorded\): ENOENT/,
    );
    expect(result.stdout).toMatch(/^run \d+: ok in /m);
  }, 90_000);

  it('check finds the metrics file a run could not write (exit 6), and passes one it could', async () => {
    const failing = await runCli(['check', '--json'], {
      ...env,
      INSIGHTS_METRICS_FILE: path.join(dir, 'missing', 'insights.prom'),
    });
    expect(failing.code, failing.stderr).toBe(WRITE_FAILED);
    const rows = (
      JSON.parse(failing.stdout) as { checks: { check: string; status: string; detail: string }[] }
    ).checks;
    expect(rows.filter((r) => r.status === 'failed')).toEqual([
      expect.objectContaining({ check: 'output', detail: expect.stringContaining('does not exist') }),
    ]);
    const passing = await runCli(['check', '--json'], {
      ...env,
      INSIGHTS_METRICS_FILE: path.join(dir, 'insights.prom'),
    });
    expect(passing.code, passing.stderr).toBe(0);
    expect(passing.stdout).toContain('"check": "output"');
  }, 90_000);
});
