import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runCli as runCliInProcess } from '../../src/cli/main.js';
import { type CountingServer, startCountingServer } from './counting-server.js';
import { runTimedCli } from './exit-clock.js';
import {
  ANY_VALUE_IS_VALID,
  CANARY,
  CONFIG_FILE_WITH_CANARY,
  configVariables,
  INVALID_SETTINGS,
} from './invalid-settings.js';

/**
 * Guarantee 9: every invalid setting makes the CLI exit non-zero in under a second, before any
 * network call, naming the variable and not its value.
 *
 * The time is measured in two ways, both after the CLI's modules are loaded (tsx alone takes
 * 1-2 s to load them on this shared machine, whatever the settings). In this process: from the
 * call to the exit code, for every variable. And as a separate process, for a few variables
 * (every one in config-fail-fast.trials.ts): from the CLI's start of work to the process's exit,
 * read inside the process by a preloaded clock (exit-clock.mjs).
 */

const BUDGET_MS = 1000;

describe('an invalid setting', () => {
  let database: CountingServer;
  let api: CountingServer;
  let dir: string;
  let base: Record<string, string>;

  beforeAll(async () => {
    database = await startCountingServer();
    api = await startCountingServer();
    dir = mkdtempSync(join(tmpdir(), 'insights-config-'));
    writeFileSync(join(dir, 'config-with-canary.json'), CONFIG_FILE_WITH_CANARY);
    // Valid on its own: the database and the API are the counting servers.
    base = {
      DATABASE_URL: `postgres://insights@127.0.0.1:${database.port}/warehouse`,
      INSIGHTS_API_URL: `http://127.0.0.1:${api.port}`,
      INSIGHTS_API_KEY: 'a-valid-key',
    };
  });
  afterAll(async () => {
    await database.close();
    await api.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const envFor = (setting: (typeof INVALID_SETTINGS)[number]) => ({
    ...base,
    ...setting.extra,
    [setting.variable]: setting.variable === 'INSIGHTS_CONFIG' ? join(dir, setting.value) : setting.value,
  });

  /** `insights-sync <command>` (default sync) in this process, with exactly `env` as its environment. */
  async function inProcess(env: Record<string, string>, command = 'sync') {
    const saved = { ...process.env };
    const stderr: string[] = [];
    const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      stderr.push(String(chunk));
      return true;
    });
    for (const name of Object.keys(process.env))
      if (/^(INSIGHTS_|DATABASE_URL$)/.test(name)) delete process.env[name];
    Object.assign(process.env, { LOG_LEVEL: 'silent' }, env);
    const started = performance.now();
    try {
      const code = await runCliInProcess(['node', 'insights-sync', command]);
      return { code, ms: performance.now() - started, stderr: stderr.join('') };
    } finally {
      spy.mockRestore();
      // In place: process.env is a special object (setting TZ changes the zone), and the next
      // test file of this worker process gets it as this one leaves it.
      for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
      Object.assign(process.env, saved);
    }
  }

  it('is tested for every variable the configuration reads', () => {
    const tested = [...INVALID_SETTINGS.map((s) => s.variable), ...ANY_VALUE_IS_VALID].sort();
    expect(tested).toEqual(configVariables());
  });

  it('the control: valid settings do reach the database (the counting servers see it)', async () => {
    const result = await inProcess(base);
    expect(result.code).not.toBe(2);
    expect(database.connections()).toBeGreaterThan(0);
  });

  it.each(INVALID_SETTINGS)(
    '$variable: exit 2 at once, naming it, not its value, with no connection',
    async (setting) => {
      const before = { database: database.connections(), api: api.connections() };
      const result = await inProcess(envFor(setting), setting.command);
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toContain(setting.names ?? `${setting.variable}:`);
      expect(result.stderr).not.toContain(CANARY);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
      expect(result.ms).toBeLessThan(BUDGET_MS);
      expect({ database: database.connections(), api: api.connections() }).toEqual(before);
    },
  );

  it("as a process: exit 2, the CLI's work under a second (timed inside the process), no connection", async () => {
    const before = { database: database.connections(), api: api.connections() };
    for (const variable of ['INSIGHTS_CONCURRENCY', 'INSIGHTS_PII_KEY', 'DATABASE_URL']) {
      const setting = INVALID_SETTINGS.find((s) => s.variable === variable);
      if (setting === undefined) throw new Error(`no invalid value for ${variable}`);
      const result = await runTimedCli(['sync'], { ...base, ...setting.extra, [variable]: setting.value });
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toContain(`${variable}:`);
      expect(`${result.stdout}${result.stderr}`).not.toContain(CANARY);
      expect(result.workMs, `${variable}: process ${Math.round(result.processMs)} ms`).toBeLessThan(
        BUDGET_MS,
      );
    }
    expect({ database: database.connections(), api: api.connections() }).toEqual(before);
  }, 60_000);
});
