import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DEFAULT_HEAP_MB,
  MALLOC_ARENAS,
  MALLOC_MMAP_THRESHOLD,
  parseHeapSetting,
  SEMI_SPACE_MB,
} from '../../bin/launch.js';
import { loadConfig } from '../../src/config/config.js';
import { ConfigError } from '../../src/errors.js';
import { type CliResult, cliEnv } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

/**
 * Memory bounded by default: sync, backfill, schedule and serve run in a child node
 * started with --max-old-space-size (bin/launch.js), and the launcher only relays. Every process
 * of the CLI here has a preloaded reporter that prints its V8 heap limit.
 */

const BIN = fileURLToPath(new URL('../../bin/insights-sync-dev.js', import.meta.url));
const MB = 1024 * 1024;

interface HeapReport {
  pid: number;
  /** v8.getHeapStatistics().heap_size_limit in MB: old space plus the young generation. */
  limitMb: number;
  maxOldSpace: string | undefined;
  mallocArenas: string | undefined;
  mmapThreshold: string | undefined;
}

let dir: string;
let reporter: string;
let t: TestDatabase;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'insights-launcher-'));
  reporter = join(dir, 'heap-reporter.mjs');
  writeFileSync(
    reporter,
    `import v8 from 'node:v8';
const maxOldSpace = process.execArgv.find((arg) => arg.startsWith('--max-old-space-size'));
const mallocArenas = process.env.MALLOC_ARENA_MAX;
const mmapThreshold = process.env.MALLOC_MMAP_THRESHOLD_;
process.stderr.write('HEAP ' + JSON.stringify({ pid: process.pid, limitMb: v8.getHeapStatistics().heap_size_limit / ${MB}, maxOldSpace, mallocArenas, mmapThreshold }) + '\\n');
`,
  );
  t = await createTestDatabase();
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await t?.drop();
});

function start(args: string[], env: Record<string, string>, options: { detached?: boolean } = {}) {
  const child = spawn(process.execPath, [BIN, ...args], {
    env: cliEnv({ ...env, NODE_OPTIONS: `--import=${reporter} ${env.NODE_OPTIONS ?? ''}`.trim() }),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.detached ?? false,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const done = new Promise<CliResult>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })),
  );
  return { child, done, output: () => ({ stdout, stderr }) };
}

/**
 * One report a process, in the order they came. Under tsx (bin/insights-sync-dev.js) the preload
 * may also run in Node's module-hooks thread of the same process: a second line with that pid.
 */
function heapReports(stderr: string): HeapReport[] {
  const reports = [...stderr.matchAll(/^HEAP (.*)$/gm)].map((m) => JSON.parse(m[1] ?? '') as HeapReport);
  return reports.filter((report, i) => reports.findIndex((r) => r.pid === report.pid) === i);
}

/** The heap limit (MB) this node gives a bare process started with `options`. */
async function plainHeapLimitMb(...options: string[]): Promise<number> {
  const child = spawn(
    process.execPath,
    [
      ...options,
      '-e',
      `process.stdout.write(String(require('node:v8').getHeapStatistics().heap_size_limit / ${MB}))`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'], env: { PATH: process.env.PATH ?? '' } },
  );
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  await new Promise((resolve) => child.on('close', resolve));
  return Number(out);
}

/** sync with no API settings: refused by the configuration (exit 2), after the launcher's choice. */
const refusedSync = (env: Record<string, string> = {}) =>
  start(['sync'], { DATABASE_URL: t.url, ...env }).done;

describe('the heap limit of long runs', () => {
  it(`sync runs in a child with --max-old-space-size=${DEFAULT_HEAP_MB} by default, and its exit code is the command's`, async () => {
    const result = await refusedSync();
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain('INSIGHTS_API_URL');
    const [launcherProcess, cli, ...more] = heapReports(result.stderr);
    expect(more).toEqual([]);
    expect(launcherProcess?.maxOldSpace).toBeUndefined();
    expect(cli?.maxOldSpace).toBe(`--max-old-space-size=${DEFAULT_HEAP_MB}`);
    // The whole heap is the old space plus a young generation of a few tens of MB.
    expect(cli?.limitMb).toBeGreaterThanOrEqual(DEFAULT_HEAP_MB);
    expect(cli?.limitMb).toBeLessThan(DEFAULT_HEAP_MB + 100);
    // Without a limit V8 sizes the heap from the machine: gigabytes here.
    expect(launcherProcess?.limitMb).toBeGreaterThan(2 * (cli?.limitMb ?? 0));
    // Few malloc arenas in the child: their resident pages were tens of MB on Node 24.
    expect(launcherProcess?.mallocArenas).toBeUndefined();
    expect(cli?.mallocArenas).toBe(MALLOC_ARENAS);
    // A fixed mmap threshold: large blocks freed go back to the system.
    expect(launcherProcess?.mmapThreshold).toBeUndefined();
    expect(cli?.mmapThreshold).toBe(MALLOC_MMAP_THRESHOLD);
  });

  it('a MALLOC_ARENA_MAX or MALLOC_MMAP_THRESHOLD_ of the environment stands', async () => {
    const [, cli] = heapReports(
      (await refusedSync({ MALLOC_ARENA_MAX: '8', MALLOC_MMAP_THRESHOLD_: '1048576' })).stderr,
    );
    expect(cli?.mallocArenas).toBe('8');
    expect(cli?.mmapThreshold).toBe('1048576');
  });

  it('INSIGHTS_MAX_HEAP_MB sets another limit; 0 sets none and starts no second process', async () => {
    const raised = heapReports((await refusedSync({ INSIGHTS_MAX_HEAP_MB: '300' })).stderr);
    expect(raised.map((r) => r.maxOldSpace)).toEqual([undefined, '--max-old-space-size=300']);
    expect(raised[1]?.limitMb).toBeGreaterThanOrEqual(300);
    expect(raised[1]?.limitMb).toBeLessThan(400);
    const none = heapReports((await refusedSync({ INSIGHTS_MAX_HEAP_MB: '0' })).stderr);
    expect(none).toHaveLength(1);
    expect(none[0]?.limitMb).toBeGreaterThan(1000);
  });

  it('a --max-old-space-size in NODE_OPTIONS wins; the child bounds only the semi-spaces beside it', async () => {
    const result = await refusedSync({
      NODE_OPTIONS: '--max-old-space-size=200',
      INSIGHTS_MAX_HEAP_MB: '300',
    });
    expect(result.code).toBe(2);
    const [launcherProcess, cli, ...more] = heapReports(result.stderr);
    expect(more).toEqual([]);
    // The user's 200 in both (NODE_OPTIONS is inherited), not 300; the child adds small semi-spaces.
    expect(cli?.maxOldSpace).toBeUndefined();
    expect(cli?.limitMb).toBe(
      await plainHeapLimitMb('--max-old-space-size=200', `--max-semi-space-size=${SEMI_SPACE_MB}`),
    );
    // Beside a limit given alone, V8 sizes the young generation itself (Node 24: three 64 MB
    // semi-spaces, more than the old space asked for): the child's heap is smaller.
    expect(launcherProcess?.limitMb).toBe(await plainHeapLimitMb('--max-old-space-size=200'));
    expect(cli?.limitMb).toBeLessThan(launcherProcess?.limitMb ?? 0);
    expect(cli?.limitMb).toBeLessThan(await plainHeapLimitMb('--max-old-space-size=300'));
  });

  it('a user who sized both the heap and the semi-spaces in NODE_OPTIONS gets one process, as given', async () => {
    const options = ['--max-old-space-size=200', '--max-semi-space-size=8'];
    const result = await refusedSync({ NODE_OPTIONS: options.join(' ') });
    expect(result.code).toBe(2);
    const reports = heapReports(result.stderr);
    expect(reports).toHaveLength(1);
    expect(reports[0]?.limitMb).toBe(await plainHeapLimitMb(...options));
  });

  it('an invalid INSIGHTS_MAX_HEAP_MB sets no limit and is refused by the configuration (exit 2, one line)', async () => {
    const result = await refusedSync({
      INSIGHTS_API_URL: 'http://127.0.0.1:9',
      INSIGHTS_API_KEY: 'k',
      INSIGHTS_MAX_HEAP_MB: '32',
    });
    expect(result.code).toBe(2);
    expect(heapReports(result.stderr)).toHaveLength(1);
    expect(result.stderr).toContain('INSIGHTS_MAX_HEAP_MB: megabytes 64-65536, or 0 for no limit');
  });

  it('the launcher and the configuration accept exactly the same values', () => {
    const required = { INSIGHTS_API_URL: 'https://api.example.com', INSIGHTS_API_KEY: 'key' };
    for (const value of [
      '',
      ' ',
      '0',
      '64',
      '0128',
      ' 256 ',
      '65536',
      '63',
      '1',
      '65537',
      '-1',
      '1e3',
      '12.5',
      'x',
    ]) {
      let configMb: number | undefined;
      try {
        configMb = loadConfig({ env: { ...required, INSIGHTS_MAX_HEAP_MB: value } }).maxHeapMb;
      } catch (error) {
        if (!(error instanceof ConfigError)) throw error;
      }
      expect(parseHeapSetting(value), `INSIGHTS_MAX_HEAP_MB=${JSON.stringify(value)}`).toBe(configMb);
    }
  });

  it('--help of a long run and the short commands start one process only', async () => {
    for (const args of [['--help'], ['sync', '--help'], ['status']]) {
      const result = await start(args, { DATABASE_URL: t.url }).done;
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(0);
      expect(heapReports(result.stderr), args.join(' ')).toHaveLength(1);
    }
  });
});

describe('signals through the launcher', () => {
  const scheduleEnv = () => ({
    DATABASE_URL: t.url,
    INSIGHTS_API_URL: 'http://127.0.0.1:9',
    INSIGHTS_API_KEY: 'key',
    INSIGHTS_SHUTDOWN_GRACE_MS: '5000',
  });

  it('Ctrl+C (SIGINT to the whole process group) reaches the CLI once: a clean stop, not "a second SIGINT"', async () => {
    const cli = start(['schedule'], scheduleEnv(), { detached: true });
    await expect.poll(() => cli.output().stdout, { timeout: 20_000 }).toContain('Stop with Ctrl+C');
    expect(heapReports(cli.output().stderr)).toHaveLength(2);
    process.kill(-(cli.child.pid ?? 0), 'SIGINT');
    const result = await cli.done;
    expect(result.stderr).not.toContain('a second SIGINT');
    expect(result.stderr).not.toContain('exiting now');
    expect(result.signal).toBeNull();
    expect([0, 130]).toContain(result.code);
  }, 40_000);

  it('SIGTERM to the launcher alone (kill <pid>, docker stop) is forwarded, and the exit code comes back', async () => {
    const cli = start(['schedule'], scheduleEnv());
    await expect.poll(() => cli.output().stdout, { timeout: 20_000 }).toContain('Stop with Ctrl+C');
    cli.child.kill('SIGTERM');
    const result = await cli.done;
    expect(result.stderr).toContain('SIGTERM');
    expect(result.signal).toBeNull();
    expect([0, 130]).toContain(result.code);
  }, 40_000);

  it('SIGKILL of the launcher ends the CLI too: nothing runs on unseen', async () => {
    const cli = start(['schedule'], scheduleEnv());
    await expect.poll(() => cli.output().stdout, { timeout: 20_000 }).toContain('Stop with Ctrl+C');
    const child = heapReports(cli.output().stderr)[1];
    expect(child?.maxOldSpace).toBeDefined();
    cli.child.kill('SIGKILL');
    expect((await cli.done).signal).toBe('SIGKILL');
    const alive = () => {
      try {
        process.kill(child?.pid ?? 0, 0);
        return true;
      } catch {
        return false;
      }
    };
    await expect.poll(alive, { timeout: 10_000 }).toBe(false);
  }, 40_000);
});
