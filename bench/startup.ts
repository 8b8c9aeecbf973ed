/**
 * Start-up and memory of the command as users run it: the package `npm pack` makes,
 * installed from its tarball into a temporary prefix (once per bench process), beside the same
 * figure through the path the CLI took before (bench/tsx-entry.mjs: the sources through tsx, one
 * process, no heap limit), measured in the same run.
 *
 * - `--help` and `status` (against a migrated warehouse on the bench's PostgreSQL server): wall
 *   time from spawn to exit, median of `repeats`, and what each adds to `node -e 0` timed alike;
 * - peak RSS of `--help`: /usr/bin/time's "maximum resident set size", median of 3;
 * - the large backfill of bench/memory.ts with no flag at all: the peak RSS of the process that
 *   runs it (the installed launcher's child) and of the launcher and that child added up;
 * - the same backfill once more, profiled (bench/memory-profile.ts): what its largest sample held.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { collectOutput } from './child-process.js';
import type { BenchServer } from './database.js';
import { type Benchmark, type RunResult, summarize } from './figures.js';
import { measureBackfill } from './memory.js';
import { profiledBackfill, type RssComposition } from './memory-profile.js';

export interface StartupOptions {
  /** Runs of --help and status per measurement; the median is taken. */
  repeats: number;
  /** Items of the backfill whose peak memory is measured (bench/memory.ts's large one). */
  backfillItems: number;
}

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const TSX_ENTRY = path.join(ROOT, 'bench', 'tsx-entry.mjs');
const TIME = '/usr/bin/time';

export const startup: Benchmark<StartupOptions> = {
  name: 'startup',
  targets: '16',
  figures: ({ repeats, backfillItems }) => [
    {
      key: 'nodeS',
      label: `\`node -e 0\`, the reference: Node's own start (median of ${repeats})`,
      unit: 's',
      digits: 2,
    },
    {
      key: 'helpOverNodeS',
      label: '`--help` installed, beyond `node -e 0` in the same run',
      unit: 's',
      digits: 2,
      target: { text: '≤ +0.15 s', met: (s) => s.median <= 0.15 },
    },
    {
      key: 'statusOverNodeS',
      label: '`status` installed, beyond `node -e 0` in the same run',
      unit: 's',
      digits: 2,
      target: { text: '≤ +0.35 s', met: (s) => s.median <= 0.35 },
    },
    {
      key: 'helpS',
      label: `\`insights-sync --help\`, installed package (median of ${repeats})`,
      unit: 's',
      digits: 2,
      target: { text: '≤ 0.30 s', met: (s) => s.median <= 0.3 },
    },
    { key: 'helpTsxS', label: '`--help` through tsx (the old path)', unit: 's', digits: 2 },
    {
      key: 'statusS',
      label: `\`status\` against a server database, installed (median of ${repeats})`,
      unit: 's',
      digits: 2,
      target: { text: '≤ 0.60 s', met: (s) => s.median <= 0.6 },
    },
    { key: 'statusTsxS', label: '`status` through tsx (the old path)', unit: 's', digits: 2 },
    {
      key: 'status200S',
      label: `\`status\` with a sources file of 200 sources, installed (median of ${repeats})`,
      unit: 's',
      digits: 2,
      target: { text: '≤ 0.60 s, as with one', met: (s) => s.median <= 0.6 },
    },
    {
      key: 'helpRssMb',
      label: 'peak RSS of `--help`, installed (median of 3)',
      unit: 'MB',
      digits: 0,
      target: { text: '≤ 90 MB', met: (s) => s.median <= 90 },
    },
    {
      key: 'helpRssTsxMb',
      label: 'peak RSS of `--help` through tsx (the old path)',
      unit: 'MB',
      digits: 0,
    },
    {
      key: 'backfillPeakMb',
      label: `peak RSS of a backfill of ~${backfillItems.toLocaleString('en-US')} items, installed, no flags`,
      unit: 'MB',
      digits: 0,
      target: { text: '≤ 200 MB in every run', met: (s) => s.max <= 200 },
    },
    {
      key: 'backfillTreeMb',
      label: 'the same, launcher and its child added up',
      unit: 'MB',
      digits: 0,
    },
    {
      key: 'backfillPeakTsxMb',
      label: 'peak RSS of the same backfill through tsx, no limit (the old path)',
      unit: 'MB',
      digits: 0,
    },
    {
      key: 'profileRssMb',
      label: 'the installed backfill again, profiled: resident set at its largest sample',
      unit: 'MB',
      digits: 0,
    },
    {
      key: 'profileFilesMb',
      label: "of it, mapped files (Node's binary and libraries, the code)",
      unit: 'MB',
      digits: 0,
    },
    { key: 'profileHeapMb', label: "of it, V8's heap (its spaces' resident pages)", unit: 'MB', digits: 0 },
    {
      key: 'profileExternalMb',
      label: 'of it, external memory (Buffers: answers and statements as bytes)',
      unit: 'MB',
      digits: 0,
    },
    {
      key: 'profileRestMb',
      label: "of it, the rest (malloc's: V8's compiler and collector, libuv; stacks)",
      unit: 'MB',
      digits: 0,
    },
    {
      key: 'profileV8MallocMb',
      label: "of the rest, V8's own allocations at their most (its compiler's zones)",
      unit: 'MB',
      digits: 0,
    },
    { key: 'profileAtPct', label: 'the largest sample, into the run', unit: '%', digits: 0 },
    { key: 'profileHwmMb', label: "the profiled run's peak RSS (VmHWM)", unit: 'MB', digits: 0 },
  ],
};

function profileMeasures(parts: RssComposition | undefined): Record<string, number> {
  if (parts === undefined) return {};
  return {
    profileRssMb: parts.rssMb,
    profileFilesMb: parts.filesMb,
    profileHeapMb: parts.heapMb,
    profileExternalMb: parts.externalMb,
    profileRestMb: parts.restMb,
    profileAtPct: parts.atPct,
    profileHwmMb: parts.hwmMb,
    profileV8MallocMb: parts.v8MallocPeakMb,
  };
}

function run(command: string, args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv }) {
  return collectOutput(spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] }));
}

/** A sources file of `count` sources (an agency's), in a temporary folder. */
function sourcesFile(count: number): string {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'insights-bench-sources-')), 'sources.json');
  const sources = Array.from({ length: count }, (_, i) => ({
    name: `site${i + 1}`,
    base_url: `https://insights${i + 1}.example.com`,
    api_key: `bench-key-${i + 1}-0123456789abcdef`,
  }));
  writeFileSync(file, JSON.stringify({ sources }));
  return file;
}

let installed: Promise<string> | undefined;

/** `npm pack` of the checkout (its `prepare` builds dist/), installed with `npm install -g --prefix`. */
function installedBin(log: (line: string) => void): Promise<string> {
  installed ??= (async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'insights-bench-package-'));
    log(`startup: npm pack and npm install -g --prefix ${dir}/prefix`);
    const pack = await run('npm', ['pack', '--pack-destination', dir], { cwd: ROOT });
    if (pack.code !== 0) throw new Error(`npm pack failed: ${pack.stderr.slice(-2000)}`);
    const tarball = readdirSync(dir).find((name) => name.endsWith('.tgz'));
    if (tarball === undefined) throw new Error('npm pack made no tarball');
    const prefix = path.join(dir, 'prefix');
    const install = await run(
      'npm',
      ['install', '-g', '--prefix', prefix, path.join(dir, tarball), '--no-audit', '--no-fund'],
      { cwd: dir },
    );
    if (install.code !== 0) throw new Error(`npm install -g failed: ${install.stderr.slice(-2000)}`);
    return path.join(prefix, 'bin', 'insights-sync');
  })();
  return installed;
}

/** The environment of a measured command: the caller's, less any warehouse or source setting. */
function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env))
    if (!/^(INSIGHTS_|DATABASE_URL$|LOG_LEVEL$|NODE_OPTIONS$)/.test(key)) env[key] = value;
  return { ...env, LOG_LEVEL: 'warn', ...extra };
}

/** Median wall time in seconds of `node ...cli ...args`, each run started after the previous ended. */
async function medianSeconds(
  cli: string[],
  args: string[],
  env: NodeJS.ProcessEnv,
  repeats: number,
  failures: string[],
): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const started = performance.now();
    const result = await run(process.execPath, [...cli, ...args], { cwd: ROOT, env });
    times.push((performance.now() - started) / 1000);
    // status exits 1 when something needs attention (a fresh warehouse has no run yet).
    if (result.code !== 0 && result.code !== 1)
      failures.push(`startup: ${args.join(' ')} exited with ${result.code}: ${result.stderr.slice(-300)}`);
  }
  return summarize(times).median;
}

/** Median of 3 of the process's peak RSS in MB, as /usr/bin/time -f %M reports it (KB). */
async function medianPeakRssMb(cli: string[], args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const peaks: number[] = [];
  for (let i = 0; i < 3; i++) {
    const result = await run(TIME, ['-f', 'maxrss=%M', process.execPath, ...cli, ...args], {
      cwd: ROOT,
      env,
    });
    const kb = Number(/maxrss=(\d+)/.exec(result.stderr)?.[1]);
    peaks.push((kb * 1024) / 1e6);
  }
  return summarize(peaks).median;
}

export async function runStartup(
  server: BenchServer,
  options: StartupOptions,
  log: (line: string) => void = () => {},
): Promise<RunResult> {
  const failures: string[] = [];
  const bin = await installedBin(log);
  const installedCli = [bin];
  const tsxCli = [TSX_ENTRY];
  const warehouse = await server.createDatabase({ max: 1 });
  try {
    const env = cleanEnv({ DATABASE_URL: warehouse.url });
    const measures: Record<string, number> = {
      nodeS: await medianSeconds(['-e', '0'], [], env, options.repeats, failures),
      helpS: await medianSeconds(installedCli, ['--help'], env, options.repeats, failures),
      helpTsxS: await medianSeconds(tsxCli, ['--help'], env, options.repeats, failures),
      statusS: await medianSeconds(installedCli, ['status'], env, options.repeats, failures),
      statusTsxS: await medianSeconds(tsxCli, ['status'], env, options.repeats, failures),
      // The file is read and every source validated before the command connects.
      status200S: await medianSeconds(
        installedCli,
        ['status'],
        { ...env, INSIGHTS_CONFIG: sourcesFile(200) },
        options.repeats,
        failures,
      ),
      helpRssMb: await medianPeakRssMb(installedCli, ['--help'], env),
      helpRssTsxMb: await medianPeakRssMb(tsxCli, ['--help'], env),
    };
    // The machine's own start, taken out: what the command adds to it is what its code decides.
    measures.helpOverNodeS = (measures.helpS ?? 0) - (measures.nodeS ?? 0);
    measures.statusOverNodeS = (measures.statusS ?? 0) - (measures.nodeS ?? 0);
    log(`startup: backfill of ~${options.backfillItems} items, installed package, no flags`);
    const ours = await measureBackfill(server, options.backfillItems, { cli: installedCli });
    log(`startup: the same backfill through tsx, no limit`);
    const before = await measureBackfill(server, options.backfillItems, { cli: tsxCli });
    log('startup: the installed backfill again, profiled (bench/rss-sampler.mjs)');
    const profiled = await profiledBackfill(server, options.backfillItems, installedCli);
    failures.push(...ours.failures, ...before.failures, ...profiled.failures);
    return {
      measures: {
        ...measures,
        backfillPeakMb: (ours.run.peakKb * 1024) / 1e6,
        backfillTreeMb: (ours.run.treePeakKb * 1024) / 1e6,
        backfillPeakTsxMb: (before.run.peakKb * 1024) / 1e6,
        ...profileMeasures(profiled.composition),
      },
      failures,
    };
  } finally {
    await warehouse.drop();
  }
}
