import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CountingServer, startCountingServer } from './counting-server.js';
import { runTimedCli } from './exit-clock.js';
import { CANARY, CONFIG_FILE_WITH_CANARY, INVALID_SETTINGS } from './invalid-settings.js';

/**
 * Guarantee 9, every variable as a separate process: exit 2, the variable named and not its
 * value, no connection to the database or the API, and the CLI's work done in under a second.
 * The time is read inside the process (exit-clock.mjs): from the moment every module is loaded
 * to the exit. The process's whole life, tsx's start-up included, is recorded beside it; on this
 * shared 2-core machine that start-up alone takes 1-2 s, whatever the settings.
 * config-fail-fast.test.ts does the same in-process for every variable in `npm test`.
 */

const BUDGET_MS = 1000;

describe('every invalid setting, as a process', () => {
  let database: CountingServer;
  let api: CountingServer;
  let dir: string;
  let base: Record<string, string>;
  const figures: { variable: string; workMs: number; processMs: number }[] = [];

  beforeAll(async () => {
    database = await startCountingServer();
    api = await startCountingServer();
    dir = mkdtempSync(join(tmpdir(), 'insights-config-'));
    writeFileSync(join(dir, 'config-with-canary.json'), CONFIG_FILE_WITH_CANARY);
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
    mkdirSync('test-output/reliability', { recursive: true });
    writeFileSync('test-output/reliability/config-fail-fast.json', `${JSON.stringify(figures, null, 2)}\n`);
  });

  it.each(INVALID_SETTINGS)(
    '$variable',
    async (setting) => {
      const value = setting.variable === 'INSIGHTS_CONFIG' ? join(dir, setting.value) : setting.value;
      const before = { database: database.connections(), api: api.connections() };
      const result = await runTimedCli([setting.command ?? 'sync'], {
        ...base,
        ...setting.extra,
        [setting.variable]: value,
      });
      figures.push({
        variable: setting.variable,
        workMs: Math.round(result.workMs),
        processMs: Math.round(result.processMs),
      });
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toContain(setting.names ?? `${setting.variable}:`);
      expect(`${result.stdout}${result.stderr}`).not.toContain(CANARY);
      expect({ database: database.connections(), api: api.connections() }).toEqual(before);
      expect(result.workMs).toBeLessThan(BUDGET_MS);
    },
    60_000,
  );
});
