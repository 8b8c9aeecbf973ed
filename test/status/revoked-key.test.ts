/**
 * A source that loaded before and whose key is then revoked (401), or refused on one endpoint
 * (403), fails every window of its next run before any is written: no failed window in the
 * ledger, no lag yet. `status` still says so, from the last run that asked the source, also after
 * a later run of another source ended ok: every source's last run outcome and last error are in
 * `status`, its table and --json alike.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import type { SourceRun } from '../../src/status/source-runs.js';
import type { RunResult } from '../../src/sync/outcomes.js';
import { addDays, todayUtc } from '../../src/time/days.js';
import { cliEnv, runCli } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst } from '../helpers/sync-harness.js';

// status reads the real clock: the simulated days end yesterday.
const TODAY = todayUtc(new Date());
const FROM = addDays(TODAY, -3);
const BETA_KEY = 'key-of-beta';

describe('a key revoked after its source loaded', () => {
  let t: TestDatabase;
  /** alpha's and beta's server; beta's key is revoked after the first run. */
  let shared: Simulator;
  /** gamma's server; it refuses recordings (403) after the first run. */
  let own: Simulator;
  let dir: string;
  let env: Record<string, string>;
  const runs: RunResult[] = [];

  const sources = () => [
    { name: 'alpha', baseUrl: shared.url, apiKey: shared.apiKey },
    { name: 'beta', baseUrl: shared.url, apiKey: BETA_KEY },
    { name: 'gamma', baseUrl: own.url, apiKey: own.apiKey },
  ];
  const run = async (names: readonly string[]) => {
    const result = await runAgainst(t, shared, {
      now: new Date(),
      settings: { startDate: FROM },
      sources: sources().filter((s) => names.includes(s.name)),
    });
    runs.push(result);
    return result;
  };

  beforeAll(async () => {
    t = await createTestDatabase();
    shared = await startSimulator({ seed: 5, from: FROM, to: addDays(TODAY, -1), apiKeys: [BETA_KEY] });
    own = await startSimulator({ seed: 6, from: FROM, to: addDays(TODAY, -1) });
    dir = await mkdtemp(join(tmpdir(), 'revoked-key-'));
    const file = join(dir, 'sources.json');
    await writeFile(
      file,
      JSON.stringify({
        sources: sources().map((s) => ({ name: s.name, base_url: s.baseUrl, api_key_env: `KEY_${s.name}` })),
      }),
    );
    env = cliEnv({
      DATABASE_URL: t.url,
      INSIGHTS_SCHEMA: t.schema,
      INSIGHTS_CONFIG: file,
      ...Object.fromEntries(sources().map((s) => [`KEY_${s.name}`, s.apiKey])),
    });
    await run(['alpha', 'beta', 'gamma']);
    shared.setOptions({ apiKeys: [] });
    own.setOptions({ forbidden: ['recordings'] });
    await run(['alpha', 'beta', 'gamma']);
  });
  afterAll(async () => {
    await Promise.all([shared.stop(), own.stop()]);
    await t.drop();
    await rm(dir, { recursive: true, force: true });
  });

  interface JsonSource {
    source: string;
    state: string;
    lastRun: SourceRun | null;
    lastError: string | null;
  }
  const statusJson = async () => {
    const result = await runCli(['status', '--json'], env);
    return {
      code: result.code,
      stderr: result.stderr,
      json: JSON.parse(result.stdout) as { sources: JsonSource[] },
    };
  };

  it('the runs: every source loaded, then beta failed whole (401) and gamma in part (403)', () => {
    expect(runs.map((r) => r.status)).toEqual(['ok', 'partial']);
    expect(runs[1]?.error).toContain('API key rejected');
  });

  it('status names both, with the run and its error, in the table and in --json; exit 1', async () => {
    const text = await runCli(['status'], env);
    expect(text.code, text.stderr).toBe(1);
    const second = runs[1]?.runId;
    expect(text.stdout).toMatch(
      new RegExp(
        `^needs attention: beta: nothing loaded in its last run, ${second} \\(sync\\): \\d+ failed; API key rejected`,
        'm',
      ),
    );
    expect(text.stdout).toMatch(
      new RegExp(
        `^needs attention: gamma: not everything loaded in its last run, ${second} \\(sync\\): \\d+ failed; .*HTTP 403`,
        'm',
      ),
    );
    expect(text.stdout).toMatch(
      new RegExp(`^ {2}beta: last run ${second} \\(sync\\) failed: \\d+ failed; API key rejected`, 'm'),
    );
    expect(text.stdout).toMatch(new RegExp(`^ {2}alpha: last run ${second} \\(sync\\) ok$`, 'm'));

    const { code, json } = await statusJson();
    expect(code).toBe(1);
    const by = new Map(json.sources.map((s) => [s.source, s]));
    expect(by.get('beta')).toMatchObject({
      state: 'needs attention',
      lastRun: { runId: second, outcome: 'failed' },
    });
    expect(by.get('beta')?.lastError).toContain('API key rejected');
    expect(by.get('gamma')).toMatchObject({
      state: 'needs attention',
      lastRun: { runId: second, outcome: 'partial' },
    });
    expect(by.get('gamma')?.lastError).toContain('HTTP 403');
    expect(by.get('alpha')).toMatchObject({
      state: 'ok',
      lastRun: { runId: second, outcome: 'ok', failed: 0 },
      lastError: null,
    });
  });

  it('a later run of another source that ends ok does not hide them', async () => {
    const third = await run(['alpha']);
    expect(third.status).toBe('ok');
    const text = await runCli(['status'], env);
    expect(text.code, text.stderr).toBe(1);
    expect(text.stdout).toMatch(/^needs attention: beta: nothing loaded in its last run/m);
    expect(text.stdout).toMatch(/^needs attention: gamma: not everything loaded in its last run/m);
    const { json } = await statusJson();
    const by = new Map(json.sources.map((s) => [s.source, s]));
    expect(by.get('alpha')?.lastRun).toMatchObject({ runId: third.runId, outcome: 'ok' });
    expect(by.get('beta')).toMatchObject({ state: 'needs attention', lastRun: { outcome: 'failed' } });

    // `--source` shows and exits on that source's reasons: alpha is healthy.
    const alpha = await runCli(['status', '--source', 'alpha'], env);
    expect(alpha.code, alpha.stdout).toBe(0);
  });

  it('the source loads again once its key is back: its last run is ok, and nothing needs attention', async () => {
    shared.setOptions({ apiKeys: [BETA_KEY] });
    own.setOptions({ forbidden: [] });
    const fourth = await run(['beta', 'gamma']);
    expect(fourth.status).toBe('ok');
    const { code, json, stderr } = await statusJson();
    expect(code, stderr).toBe(0);
    expect(json.sources.map((s) => [s.source, s.state, s.lastRun?.outcome])).toEqual([
      ['alpha', 'ok', 'ok'],
      ['beta', 'ok', 'ok'],
      ['gamma', 'ok', 'ok'],
    ]);
  });
});
