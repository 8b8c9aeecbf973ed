import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acquireRunLock, type RunLock } from '../../src/db/run-lock.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { addDays, todayUtc } from '../../src/time/days.js';
import { type CliResult, cliEnv, runCli, startCli } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

/**
 * Every row of the exit-code tables (the README's short one, docs/operating.md's in full), checked
 * by running the CLI.
 */

const read = (file: string) => readFileSync(fileURLToPath(new URL(`../../${file}`, import.meta.url)), 'utf8');
const TODAY = todayUtc(new Date());
const FROM = addDays(TODAY, -6);
const TO = addDays(TODAY, -1);

/** The codes of a file's table ("| `N` | meaning |" under its "Exit codes" heading). */
function documentedCodes(file: string): number[] {
  const text = read(file);
  const heading = /^#+ Exit codes$/m.exec(text);
  if (heading === null) return [];
  const section = text.slice(heading.index);
  const table = section.slice(0, section.indexOf('\n\n', section.indexOf('|')));
  return [...table.matchAll(/^\| `(\d+)` \|/gm)].map((m) => Number(m[1]));
}

interface Row {
  code: number;
  what: string;
  run: () => Promise<CliResult>;
}

describe('exit codes', () => {
  let t: TestDatabase;
  let sim: Simulator;
  let slow: Simulator;
  let partial: Simulator;
  let env: Record<string, string>;

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 3, from: FROM, to: TO });
    // Slow enough that a signal comes while windows are in flight.
    slow = await startSimulator({ seed: 3, from: addDays(TODAY, -60), to: TO, latencyMs: 300 });
    // One endpoint that does not exist: its resource fails, the others load.
    partial = await startSimulator({ seed: 3, from: FROM, to: TO, missing: ['recordings'] });
    env = cliEnv({ DATABASE_URL: t.url, INSIGHTS_API_URL: sim.url, INSIGHTS_API_KEY: sim.apiKey });
  });
  afterAll(async () => {
    await Promise.all([sim.stop(), slow.stop(), partial.stop()]);
    await t.drop();
  });

  /** Starts a backfill against the slow simulator and sends `signal` once its run is planned. */
  async function interrupted(signal: NodeJS.Signals): Promise<CliResult> {
    const cli = startCli(['backfill', '--from', addDays(TODAY, -60), '--to', TO, '--resources', 'feedback'], {
      ...env,
      INSIGHTS_API_URL: slow.url,
      INSIGHTS_API_KEY: slow.apiKey,
      INSIGHTS_CONCURRENCY: '1',
      LOG_LEVEL: 'info',
    });
    let stderr = '';
    cli.child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    await expect.poll(() => stderr, { timeout: 30_000, interval: 50 }).toContain('run planned');
    cli.child.kill(signal);
    return cli.done;
  }

  const rows: Row[] = [
    { code: 0, what: 'a run that loaded everything', run: () => runCli(['sync'], env) },
    { code: 0, what: '--version', run: () => runCli(['--version'], env) },
    { code: 0, what: 'the help command', run: () => runCli(['help'], env) },
    {
      code: 1,
      what: 'a run with a failed resource',
      run: () =>
        runCli(['sync'], { ...env, INSIGHTS_API_URL: partial.url, INSIGHTS_API_KEY: partial.apiKey }),
    },
    { code: 2, what: 'a bad --from', run: () => runCli(['backfill', '--from', '2026-13-01'], env) },
    { code: 2, what: 'an unknown option', run: () => runCli(['sync', '--colour'], env) },
    { code: 2, what: 'an unknown command', run: () => runCli(['synch'], env) },
    { code: 2, what: 'no command', run: () => runCli([], env) },
    { code: 2, what: 'a missing mandatory option', run: () => runCli(['backfill'], env) },
    { code: 2, what: 'a bad setting', run: () => runCli(['sync'], { ...env, INSIGHTS_CONCURRENCY: 'many' }) },
    { code: 2, what: 'serve without a webhook token', run: () => runCli(['serve'], env) },
    {
      code: 2,
      what: 'serve with a malformed webhook token',
      run: () => runCli(['serve'], { ...env, INSIGHTS_WEBHOOK_TOKEN: 'short' }),
    },
    { code: 3, what: 'a rejected key', run: () => runCli(['sync'], { ...env, INSIGHTS_API_KEY: 'wrong' }) },
    {
      code: 4,
      what: 'the lock held by another run',
      run: async () => {
        const lock: RunLock = await acquireRunLock({ url: t.url, schema: t.schema });
        try {
          return await runCli(['sync'], env);
        } finally {
          await lock.release();
        }
      },
    },
    {
      code: 5,
      what: 'a database that cannot be reached',
      run: () => runCli(['status'], { ...env, DATABASE_URL: 'postgres://nobody@127.0.0.1:9/warehouse' }),
    },
    {
      code: 6,
      what: 'a write that failed (--out on a full disk)',
      run: () => runCli(['dbt-sources', '--out', '/dev/full'], env),
    },
    { code: 130, what: 'a backfill stopped by SIGINT', run: () => interrupted('SIGINT') },
    { code: 130, what: 'a backfill stopped by SIGTERM', run: () => interrupted('SIGTERM') },
  ];

  it.each(['README.md', 'docs/operating.md'])('%s documents exactly the codes tested here', (file) => {
    expect(documentedCodes(file)).toEqual([...new Set(rows.map((r) => r.code))]);
  });

  it.each(rows)(
    '$code: $what',
    async (row) => {
      const result = await row.run();
      expect(result.code, result.stderr).toBe(row.code);
      // A failure says why in its last line; never a stack trace.
      if (row.code !== 0) expect(result.stderr).not.toMatch(/\n\s+at /);
      // Commander's own usage errors speak in the same voice as every other failure.
      if (row.code === 2) {
        expect(result.stderr).toMatch(/^insights-sync: /m);
        expect(result.stderr).not.toMatch(/^error: /m);
      }
    },
    90_000,
  );
});
