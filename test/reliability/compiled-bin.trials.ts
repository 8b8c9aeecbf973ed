import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { addDays, todayUtc } from '../../src/time/days.js';
import { type CliResult, cliEnv } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

/**
 * The installed command runs the build (bin/insights-sync.js -> dist/), and every other test runs
 * the sources (bin/insights-sync-dev.js). This one builds the current sources as `npm run build`
 * does, into a package-shaped folder of its own (test-output/compiled: never the checkout's
 * dist/, which may be stale or in use), and runs the compiled bin: --help, status, a sync.
 * test/reliability/package.trials.ts installs the packed tarball and runs `insights-sync demo` from it.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PACKAGE = path.join(ROOT, 'test-output', 'compiled');
const BIN = path.join(PACKAGE, 'bin', 'insights-sync.js');
const run = promisify(execFile);

/** Logs every module a process resolves to the file in MODULE_LOG (test/cli/lazy-commands.test.ts). */
const HOOK = path.join(ROOT, 'test', 'cli', 'fixtures', 'module-log.mjs');

function cli(
  bin: string,
  args: string[],
  env: Record<string, string>,
  nodeArgs: string[] = [],
): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(process.execPath, [...nodeArgs, bin, ...args], { env: cliEnv(env) }, (error, stdout, stderr) => {
      const failed = error as (Error & { code?: number; signal?: NodeJS.Signals }) | null;
      resolve({
        code: failed === null ? 0 : (failed.code ?? null),
        signal: failed?.signal ?? null,
        stdout,
        stderr,
      });
    });
  });
}

describe('the compiled CLI', () => {
  let t: TestDatabase;
  let sim: Simulator;

  beforeAll(async () => {
    mkdirSync(path.join(PACKAGE, 'bin'), { recursive: true });
    // package.json's "build", into this folder; incremental, so that a second run compiles only
    // what changed (tsc checks every source against its build info).
    await run(
      process.execPath,
      [
        path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'),
        '-p',
        path.join(ROOT, 'tsconfig.build.json'),
        '--outDir',
        path.join(PACKAGE, 'dist'),
        '--incremental',
        '--tsBuildInfoFile',
        path.join(PACKAGE, 'build.tsbuildinfo'),
      ],
      { cwd: ROOT },
    );
    // Its last step: the CLI bundled as bin/insights-sync.js runs it.
    await run(process.execPath, [path.join(ROOT, 'scripts', 'bundle-cli.mjs'), path.join(PACKAGE, 'dist')], {
      cwd: ROOT,
    });
    copyFileSync(path.join(ROOT, 'package.json'), path.join(PACKAGE, 'dist', 'package.json'));
    copyFileSync(path.join(ROOT, 'package.json'), path.join(PACKAGE, 'package.json'));
    for (const file of ['insights-sync.js', 'launch.js'])
      copyFileSync(path.join(ROOT, 'bin', file), path.join(PACKAGE, 'bin', file));
    // The dependencies but tsx (a dev dependency now): the compiled CLI must not need it.
    const modules = path.join(PACKAGE, 'node_modules');
    rmSync(modules, { recursive: true, force: true });
    mkdirSync(modules);
    for (const name of readdirSync(path.join(ROOT, 'node_modules')))
      if (name !== 'tsx' && name !== '.bin')
        symlinkSync(path.join(ROOT, 'node_modules', name), path.join(modules, name));
    t = await createTestDatabase();
    sim = await startSimulator({
      seed: 16,
      from: addDays(todayUtc(new Date()), -5),
      to: todayUtc(new Date()),
    });
  }, 240_000);
  afterAll(async () => {
    await sim?.stop();
    await t?.drop();
  });

  it('--help runs from dist/, without tsx (not even installed beside it)', async () => {
    expect(existsSync(path.join(PACKAGE, 'node_modules', 'tsx'))).toBe(false);
    const result = await cli(BIN, ['--help'], {});
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('Usage: insights-sync');
    expect(readFileSync(BIN, 'utf8')).toContain('../dist/cli/main.js');
  });

  it('migrates, syncs (through the heap-limited child) and reports status against a warehouse', async () => {
    const env = { DATABASE_URL: t.url, INSIGHTS_API_URL: sim.url, INSIGHTS_API_KEY: sim.apiKey };
    const sync = await cli(BIN, ['sync'], env);
    expect(sync.code, sync.stderr).toBe(0);
    const status = await cli(BIN, ['status', '--json'], env);
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ healthy: true });
    const runs = await t.db.selectFrom('sync_runs').select(['status']).execute();
    expect(runs.map((r) => r.status)).toEqual(['ok']);
  }, 60_000);

  it('is bundled: status loads kysely and zod inlined, not file by file, and --help still loads no database code', async () => {
    const env = { DATABASE_URL: t.url, INSIGHTS_API_URL: sim.url, INSIGHTS_API_KEY: sim.apiKey };
    const modulesOf = async (args: string[]) => {
      const log = path.join(PACKAGE, `modules-${args.join('-')}.txt`);
      rmSync(log, { force: true });
      const result = await cli(BIN, args, { ...env, MODULE_LOG: log }, ['--import', HOOK]);
      expect(result.code, result.stderr).toBe(0);
      return [...new Set(readFileSync(log, 'utf8').split('\n').filter(Boolean))];
    };
    const status = await modulesOf(['status']);
    // The control: the hook sees what status loads from node_modules (pg stays a package).
    expect(status.some((url) => url.includes('/node_modules/pg/'))).toBe(true);
    expect(status.filter((url) => /\/node_modules\/(kysely|zod)\//.test(url))).toEqual([]);
    // zod's 64 locales are three quarters of its build: imported as a namespace (`import * as z`),
    // not its `z` object, it is shaken to the one that formats messages. luxon is for schedules.
    const localesOf = (url: string) =>
      [
        ...readFileSync(fileURLToPath(url), 'utf8').matchAll(/^\/\/ .*\/zod\/v4\/locales\/([\w-]+)\.js$/gm),
      ].map((match) => match[1]);
    const chunks = status.filter((url) => url.includes('/dist/cli/'));
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks.flatMap(localesOf)).toEqual(['en']);
    expect(status.filter((url) => url.includes('/node_modules/luxon/'))).toEqual([]);
    // Unbundled (dist/src/cli/main.js), status resolved 560 distinct modules, 352 of them
    // kysely's and zod's; bundled, 130.
    expect(status.length).toBeLessThan(200);
    const help = await modulesOf(['--help']);
    expect(help.filter((url) => /\/node_modules\/(pg|pg-boss|fastify|kysely|zod)\//.test(url))).toEqual([]);
  }, 60_000);

  it('says in one line what to do when dist/ is missing', async () => {
    const bare = path.join(ROOT, 'test-output', 'compiled-missing', 'bin');
    rmSync(path.dirname(bare), { recursive: true, force: true });
    mkdirSync(bare, { recursive: true });
    for (const file of ['insights-sync.js', 'launch.js'])
      copyFileSync(path.join(ROOT, 'bin', file), path.join(bare, file));
    const result = await cli(path.join(bare, 'insights-sync.js'), ['--help'], {});
    expect(result.code).toBe(2);
    expect(result.stderr).toBe('insights-sync: the compiled CLI (dist/) is missing: run npm run build\n');
  });
});
