/**
 * `status` starts from the configuration as well as the warehouse: a configured source whose key
 * was always rejected has written nothing, and still has its line ("never loaded", with the
 * error); a warehouse source no longer configured is marked so. A run where one source's key was
 * rejected and the others loaded is partial, and the rejected source's days count as failed.
 * Every exit 1 of status says why, with the next step.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import type { RunResult } from '../../src/sync/outcomes.js';
import { addDays, todayUtc } from '../../src/time/days.js';
import { cliEnv, runCli } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst, simulatorSource } from '../helpers/sync-harness.js';

// status reads the real clock: the simulated days end yesterday.
const TODAY = todayUtc(new Date());
const FROM = addDays(TODAY, -3);
const SOURCES = ['client01', 'client02', 'client03'];

describe('status of the configured sources', () => {
  let t: TestDatabase;
  let sim: Simulator;
  let dir: string;
  let run: RunResult;

  /** A sources file naming `names`; client03's key is wrong. */
  async function sourcesFile(names: readonly string[]): Promise<Record<string, string>> {
    const file = join(dir, `sources-${names.length}.json`);
    await writeFile(
      file,
      JSON.stringify({
        sources: names.map((name) => ({ name, base_url: sim.url, api_key_env: `KEY_${name}` })),
      }),
    );
    return cliEnv({
      DATABASE_URL: t.url,
      INSIGHTS_SCHEMA: t.schema,
      INSIGHTS_CONFIG: file,
      ...Object.fromEntries(names.map((n) => [`KEY_${n}`, n === 'client03' ? 'wrong-key' : sim.apiKey])),
    });
  }

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 7, from: FROM, to: addDays(TODAY, -1), cap: 4000 });
    dir = await mkdtemp(join(tmpdir(), 'status-configured-'));
    run = await runAgainst(t, sim, {
      now: new Date(),
      settings: { startDate: FROM },
      sources: SOURCES.map((name) =>
        simulatorSource(sim, name, name === 'client03' ? 'wrong-key' : sim.apiKey),
      ),
    });
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
    await rm(dir, { recursive: true, force: true });
  });

  it('one rejected key among loaded sources: the run is partial, its days failed or not run because of it', () => {
    expect(run.status).toBe('partial');
    expect(run.error).toContain('API key rejected');
    let failed = 0;
    for (const [resource, s] of Object.entries(run.summary.client03 ?? {})) {
      // As the ledger has them: failed if asked, else not run; none loaded.
      expect((s?.failedWindows ?? 0) + (s?.skippedWindows ?? 0), resource).toBe(Math.max(1, s?.windows ?? 0));
      expect(s?.errors.join(), resource).toContain('API key rejected');
      failed += s?.failedWindows ?? 0;
    }
    expect(failed).toBeGreaterThan(0);
    expect(run.summary.client01?.feedback?.failedWindows).toBe(0);
  });

  it('every configured source has a line: the one never loaded says so, with its last error and next step; exit 1', async () => {
    const env = await sourcesFile(SOURCES);
    const result = await runCli(['status'], env);
    expect(result.code, result.stderr).toBe(1);
    expect(result.stdout).toMatch(/^client03\s+feedback\s+never loaded/m);
    expect(result.stdout).toMatch(/^ {2}client03: never loaded; last error: .*API key rejected/m);
    expect(result.stdout).toMatch(
      /^needs attention: client03: configured, never loaded; last error: .*API key rejected/m,
    );
    expect(result.stdout).toMatch(/^needs attention: the last run, \d+ \(sync\), ended partial/m);
    expect(result.stdout).toMatch(/^ {2}next: fix its key or URL/m);
    for (const source of ['client01', 'client02'])
      expect(result.stdout).toMatch(new RegExp(`^${source}\\s+feedback\\s+${addDays(TODAY, -1)}`, 'm'));

    const one = await runCli(['status', '--source', 'client03'], env);
    expect(one.code, one.stderr).toBe(1);
    expect(one.stdout).toMatch(/^client03\s+feedback\s+never loaded/m);
    expect(one.stdout).toContain('needs attention: client03: configured, never loaded');

    const json = JSON.parse((await runCli(['status', '--json'], env)).stdout) as {
      healthy: boolean;
      sources: { source: string; state: string; configured: boolean; lastError: string | null }[];
      attention: { source?: string; reason: string; next: string }[];
    };
    expect(json.healthy).toBe(false);
    expect(json.sources.map((s) => [s.source, s.state])).toEqual([
      ['client01', 'ok'],
      ['client02', 'ok'],
      ['client03', 'never loaded'],
    ]);
    expect(json.sources[2]?.lastError).toContain('API key rejected');
    expect(
      json.attention.some((a) => a.source === 'client03' && a.next.includes('insights-sync check')),
    ).toBe(true);
  });

  it('a warehouse source no longer configured is marked so, and is not a reason for exit 1', async () => {
    const env = await sourcesFile(['client02']);
    const json = JSON.parse((await runCli(['status', '--json'], env)).stdout) as {
      sources: { source: string; state: string }[];
      attention: { source?: string }[];
    };
    expect(json.sources).toContainEqual(
      expect.objectContaining({ source: 'client01', state: 'not configured' }),
    );
    expect(json.attention.filter((a) => a.source !== undefined)).toEqual([]);
    const text = await runCli(['status'], env);
    expect(text.stdout).toMatch(/^ {2}client01: not configured/m);
  });
});
