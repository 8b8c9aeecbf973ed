/**
 * Target 4, memory: the real CLI (`node bin/insights-sync.js backfill`) in a process of its own
 * backfills `items` items from the simulator in another process (`insights-sync simulate` with
 * volume flags), while this process samples the backfill's resident memory from
 * /proc/<pid>/status (VmHWM: the kernel's own peak). The same volume per day at two sizes: the
 * larger one spans ten times the days, and its peak must not be ten times larger.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { generateDataset } from '../src/simulator/server.js';
import { addDays, todayUtc } from '../src/time/days.js';
import { listeningUrl } from './child-process.js';
import type { BenchServer } from './database.js';
import type { Benchmark, RunResult, Summary } from './figures.js';

export interface MemoryOptions {
  /** Items of the small and the large backfill (feedback, survey answers, recordings together). */
  small: number;
  large: number;
  /**
   * Both again with `NODE_OPTIONS=--max-old-space-size=<this>`: V8 sizes its heap from the
   * machine's memory and collects lazily, so without a cap the peak says more about V8's
   * appetite than about what the sync holds.
   */
  heapCapMb?: number;
}

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
/**
 * The CLI from the sources (the same launcher as the installed one: sync and backfill run in a
 * child with INSIGHTS_MAX_HEAP_MB's heap limit). bench/startup.ts measures the installed package.
 */
const CLI = path.join(ROOT, 'bin', 'insights-sync-dev.js');
/** Mean items per day: about 2,000, so half a million items take some 250 days. */
const VOLUME = { feedbackPerDay: 1000, surveyPerDay: 600, recordingsPerDay: 400, busyDayFeedback: 3000 };
/**
 * The sync asks each day with this limit (and the simulator caps no lower): the busiest days
 * (3.5 x the mean) and their next day fit in one response, one request per window.
 */
const LIMIT = 10_000;
const SAMPLE_MS = 50;

export const memory: Benchmark<MemoryOptions> = {
  name: 'memory',
  targets: '4',
  figures: ({ small, large, heapCapMb }) => [
    { key: 'smallItems', label: `items of the small backfill (~${fmt(small)})`, unit: '', digits: 0 },
    { key: 'smallDays', label: 'days of the small backfill', unit: '', digits: 0 },
    { key: 'smallPeakMb', label: 'peak RSS of the backfill process, small', unit: 'MB', digits: 0 },
    { key: 'largeItems', label: `items of the large backfill (~${fmt(large)})`, unit: '', digits: 0 },
    { key: 'largeDays', label: 'days of the large backfill', unit: '', digits: 0 },
    { key: 'largeSeconds', label: 'large backfill duration', unit: 's', digits: 1 },
    {
      key: 'largePeakMb',
      label: 'peak RSS of the backfill process, large',
      unit: 'MB',
      digits: 0,
      target: { text: '≤ 250 MB in every run', met: (s) => s.max <= 250 },
    },
    {
      key: 'growth',
      label: 'peak RSS large / small',
      unit: 'x',
      digits: 2,
      target: { text: '≤ 1.20 (flat: 10x the days)', met: (s) => s.median <= 1.2 },
    },
    ...(heapCapMb === undefined
      ? []
      : [
          {
            key: 'cappedSmallPeakMb',
            label: `peak RSS, small, NODE_OPTIONS=--max-old-space-size=${heapCapMb}`,
            unit: 'MB',
            digits: 0,
          },
          {
            key: 'cappedLargePeakMb',
            label: `peak RSS, large, NODE_OPTIONS=--max-old-space-size=${heapCapMb}`,
            unit: 'MB',
            digits: 0,
            target: { text: '≤ 250 MB in every run', met: (s: Summary) => s.max <= 250 },
          },
          {
            key: 'cappedGrowth',
            label: `peak RSS large / small, --max-old-space-size=${heapCapMb}`,
            unit: 'x',
            digits: 2,
            target: { text: '≤ 1.20', met: (s: Summary) => s.median <= 1.2 },
          },
        ]),
  ],
};

function fmt(n: number): string {
  return n.toLocaleString('en-US');
}

/** The last `days` closed days whose generated data holds at least `items` items. */
export function rangeFor(items: number): { from: string; to: string; items: number; days: number } {
  const to = addDays(todayUtc(new Date()), -1);
  const perDay = VOLUME.feedbackPerDay + VOLUME.surveyPerDay + VOLUME.recordingsPerDay;
  for (
    let days = Math.max(2, Math.floor(items / (perDay * 1.1)));
    ;
    days += Math.max(1, Math.ceil(days / 50))
  ) {
    const from = addDays(to, -(days - 1));
    const totals = generateDataset({ from, to, volume: VOLUME }).totals();
    const total = totals.feedback + totals.survey + totals.recordings;
    if (total >= items) return { from, to, items: total, days };
  }
}

export async function startSimulatorProcess(
  from: string,
  to: string,
  shape: { cap: number; volume: typeof VOLUME } = { cap: 4 * LIMIT, volume: VOLUME },
): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(
    process.execPath,
    [
      CLI,
      'simulate',
      '--port',
      '0',
      '--from',
      from,
      '--to',
      to,
      '--cap',
      String(shape.cap),
      '--feedback-per-day',
      String(shape.volume.feedbackPerDay),
      '--survey-per-day',
      String(shape.volume.surveyPerDay),
      '--recordings-per-day',
      String(shape.volume.recordingsPerDay),
      '--busy-day-feedback',
      String(shape.volume.busyDayFeedback),
    ],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: cleanEnv({ LOG_LEVEL: 'warn' }) },
  );
  const url = await listeningUrl(child, /listening at (http:\/\/\S+)/, 'simulate');
  return { url, child };
}

/** The environment without any setting of the caller's own warehouse or sources. */
export function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (key.startsWith('INSIGHTS_') || key === 'DATABASE_URL' || key === 'LOG_LEVEL') continue;
    env[key] = value;
  }
  return { ...env, ...extra };
}

async function statusKb(pid: number, field: 'VmHWM' | 'VmRSS'): Promise<number | undefined> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
    return match?.[1] === undefined ? undefined : Number(match[1]);
  } catch {
    return undefined;
  }
}

/** The process and its descendants: the launcher runs a long command in a child (bin/launch.js). */
async function processTree(pid: number): Promise<number[]> {
  const children = await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8').catch(() => '');
  const ids = children
    .split(' ')
    .filter((id) => id.trim() !== '')
    .map(Number);
  return [pid, ...(await Promise.all(ids.map(processTree))).flat()];
}

export interface Backfill {
  /** The largest peak of one process of the tree: the CLI's, wherever it runs. */
  peakKb: number;
  /** The peaks of every process of the tree added up (the launcher's with the CLI's). */
  treePeakKb: number;
  seconds: number;
  code: number | null;
  stderr: string;
}

/** Runs the backfill command (`cli`: node's arguments before it) and samples its memory until it exits. */
export async function backfill(
  env: NodeJS.ProcessEnv,
  from: string,
  to: string,
  cli: string[] = [CLI],
): Promise<Backfill> {
  const started = performance.now();
  const child = spawn(
    process.execPath,
    [...cli, 'backfill', '--from', from, '--to', to, '--resources', 'feedback,survey,recordings'],
    { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'], env },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const pid = child.pid;
  if (pid === undefined) throw new Error('could not start the backfill');
  const peaks = new Map<number, number>();
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let running = true;
  void exited.then(() => {
    running = false;
  });
  while (running) {
    // VmHWM is the peak so far: the last read before the exit is the peak but for the last 50 ms.
    for (const id of await processTree(pid)) {
      const hwm = (await statusKb(id, 'VmHWM')) ?? (await statusKb(id, 'VmRSS'));
      if (hwm !== undefined) peaks.set(id, Math.max(peaks.get(id) ?? 0, hwm));
    }
    await sleep(SAMPLE_MS);
  }
  const code = await exited;
  return {
    peakKb: Math.max(0, ...peaks.values()),
    treePeakKb: [...peaks.values()].reduce((a, b) => a + b, 0),
    seconds: (performance.now() - started) / 1000,
    code,
    stderr,
  };
}

/**
 * A backfill of about `items` items by the CLI started as `node ...cli` (the sources by default),
 * `env` added to its environment, against the simulate command in a process of its own.
 */
export async function measureBackfill(
  server: BenchServer,
  items: number,
  options: { heapCapMb?: number; cli?: string[]; env?: Record<string, string> } = {},
) {
  const { heapCapMb, cli = [CLI] } = options;
  const range = rangeFor(items);
  const simulator = await startSimulatorProcess(range.from, range.to);
  const warehouse = await server.createDatabase({ max: 1 });
  try {
    const env = cleanEnv({
      DATABASE_URL: warehouse.url,
      INSIGHTS_API_URL: simulator.url,
      INSIGHTS_API_KEY: 'sim-key',
      INSIGHTS_LIMIT: String(LIMIT),
      LOG_LEVEL: 'warn',
      ...(heapCapMb === undefined ? {} : { NODE_OPTIONS: `--max-old-space-size=${heapCapMb}` }),
      ...options.env,
    });
    const run = await backfill(env, range.from, range.to, cli);
    const failures: string[] = [];
    if (run.code !== 0)
      failures.push(`memory: backfill exited with ${run.code}: ${run.stderr.trim().slice(-500)}`);
    const { rows } = await sql<{ n: number }>`
      select (select count(*) from feedback) + (select count(*) from survey_answers)
           + (select count(*) from recordings) as n`.execute(warehouse.db);
    const stored = Number(rows[0]?.n ?? 0);
    if (stored !== range.items)
      failures.push(`memory: ${stored} items stored, the simulator served ${range.items}`);
    return { range, run, failures };
  } finally {
    simulator.child.kill('SIGTERM');
    await warehouse.drop();
  }
}

export async function runMemory(server: BenchServer, options: MemoryOptions): Promise<RunResult> {
  const small = await measureBackfill(server, options.small);
  const large = await measureBackfill(server, options.large);
  const capped =
    options.heapCapMb === undefined
      ? undefined
      : {
          small: await measureBackfill(server, options.small, { heapCapMb: options.heapCapMb }),
          large: await measureBackfill(server, options.large, { heapCapMb: options.heapCapMb }),
        };
  return {
    measures: {
      ...(capped === undefined
        ? {}
        : {
            cappedSmallPeakMb: (capped.small.run.peakKb * 1024) / 1e6,
            cappedLargePeakMb: (capped.large.run.peakKb * 1024) / 1e6,
            cappedGrowth: capped.large.run.peakKb / capped.small.run.peakKb,
          }),
      smallItems: small.range.items,
      smallDays: small.range.days,
      smallPeakMb: (small.run.peakKb * 1024) / 1e6,
      largeItems: large.range.items,
      largeDays: large.range.days,
      largeSeconds: large.run.seconds,
      largePeakMb: (large.run.peakKb * 1024) / 1e6,
      growth: large.run.peakKb / small.run.peakKb,
    },
    failures: [
      ...small.failures,
      ...large.failures,
      ...(capped?.small.failures ?? []),
      ...(capped?.large.failures ?? []),
    ],
  };
}
