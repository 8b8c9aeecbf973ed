/**
 * Issue 14, the queue: a latency-bound backfill of `sources` sources through `backfill --queue`'s
 * code (runSync with the queue's dispatch), its windows run by 1, 2 and 4 `worker` processes
 * (the dev CLI, each INSIGHTS_WORKER_CONCURRENCY=4), every source allowing 2 windows in flight
 * (INSIGHTS_SOURCE_CONCURRENCY=2). The simulator answers after a fixed latency on a thread of its
 * own, each source with its own key, and counts each key's requests in flight. With W windows and
 * at most min(workers x 4, sources x 2) in flight, the ideal is ceil(W / in flight) x latency.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bookkeepingSchema, queueSchema } from '../src/db/bookkeeping.js';
import { silentLogger } from '../src/log/logger.js';
import { queueDispatch } from '../src/sync/queue-dispatch.js';
import { runSync, type SyncSettings } from '../src/sync/run-sync.js';
import { ensureSlots } from '../src/sync/source-slots.js';
import { openQueue, type QueueSettings } from '../src/sync/window-queue.js';
import { addDays, todayUtc } from '../src/time/days.js';
import { backendPids, cpuMsOf, processCpuMs } from './cpu.js';
import type { BenchServer } from './database.js';
import { startSimulatorThread } from './extraction.js';
import type { Benchmark, FigureSpec, RunResult } from './figures.js';

export interface QueueBenchOptions {
  days: number;
  sources: number;
  latencyMs: number;
  /** Worker process counts measured, the first the reference of the speedups. */
  workers: number[];
}

const PER_SOURCE = 2;
const PER_WORKER = 4;
const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const BIN = path.join(ROOT, 'bin', 'insights-sync-dev.js');

const SPEEDUP_TARGETS: Record<number, number> = { 2: 1.8, 4: 3.2 };

export const queue: Benchmark<QueueBenchOptions> = {
  name: 'queue',
  targets: 'issue 14',
  figures: ({ workers, sources, latencyMs }) => [
    { key: 'windows', label: 'windows (sources x days x 3 resources)', unit: '', digits: 0 },
    ...workers.flatMap((n): FigureSpec[] => [
      {
        key: `idealMs${n}`,
        label: `${n} worker(s): ideal ceil(windows / in flight) x latency`,
        unit: 'ms',
        digits: 0,
      },
      {
        key: `wallMs${n}`,
        label: `${n} worker(s): backfill wall time (once learned)`,
        unit: 'ms',
        digits: 0,
      },
      { key: `requestsPerWindow${n}`, label: `${n} worker(s): requests per window`, unit: '', digits: 3 },
      { key: `overIdeal${n}`, label: `${n} worker(s): wall time / ideal`, unit: 'x', digits: 3 },
      {
        key: `jobMs${n}`,
        label: `${n} worker(s): mean time a worker holds a job (taken to completed; latency ${latencyMs} ms)`,
        unit: 'ms',
        digits: 0,
      },
      ...(n === workers[0]
        ? []
        : [
            {
              key: `speedup${n}`,
              label: `${n} workers: speedup over ${workers[0]}`,
              unit: 'x',
              digits: 2,
              ...(SPEEDUP_TARGETS[n] === undefined
                ? {}
                : {
                    target: {
                      text: `≥ ${SPEEDUP_TARGETS[n]}`,
                      met: (s: { median: number }) => s.median >= (SPEEDUP_TARGETS[n] ?? 0),
                    },
                  }),
            },
          ]),
      {
        key: `cpuWorkers${n}`,
        label: `${n} worker(s): CPU per window, worker processes`,
        unit: 'ms',
        digits: 1,
      },
      { key: `cpuPostgres${n}`, label: `${n} worker(s): CPU per window, PostgreSQL`, unit: 'ms', digits: 1 },
      {
        key: `cpuBench${n}`,
        label: `${n} worker(s): CPU per window, planner and simulator`,
        unit: 'ms',
        digits: 1,
      },
      {
        key: `coresBusy${n}`,
        label: `${n} worker(s): cores kept busy (CPU time / wall time, of ${availableParallelism()})`,
        unit: '',
        digits: 2,
      },
      {
        key: `maxInFlight${n}`,
        label: `${n} worker(s): most requests in flight for one source (simulator, per key)`,
        unit: '',
        digits: 0,
        target: { text: `≤ ${PER_SOURCE} in every run`, met: (s) => s.max <= PER_SOURCE },
      },
    ]),
    { key: 'sources', label: `sources (${sources}, each ${PER_SOURCE} in flight)`, unit: '', digits: 0 },
  ],
};

function settings(startDate: string): SyncSettings {
  return {
    concurrency: 4,
    lookbackDays: 3,
    startDate,
    limit: 1000,
    maxLimit: 10_000,
    requestTimeoutMs: 30_000,
    maxAttempts: 5,
    retryBaseMs: 500,
    retryMaxMs: 30_000,
    retryAfterCapMs: 60_000,
    maxInvalidShare: 0.05,
  };
}

const QUEUE: QueueSettings = {
  sourceConcurrency: PER_SOURCE,
  queueExpireSeconds: 900,
  queueMaintenanceSeconds: 60,
  queueRetryLimit: 3,
};

export async function runQueue(server: BenchServer, options: QueueBenchOptions): Promise<RunResult> {
  const { days, sources, latencyMs } = options;
  const to = addDays(todayUtc(new Date()), -1);
  const from = addDays(to, -(days - 1));
  const keys = Array.from({ length: sources }, (_, i) => `bench-key-${i + 1}`);
  const simulator = await startSimulatorThread({ from, to, latencyMs, cap: 10_000, apiKeys: keys });
  const dir = mkdtempSync(path.join(tmpdir(), 'insights-bench-queue-'));
  const configFile = path.join(dir, 'sources.json');
  const sourceConfigs = keys.map((key, i) => ({ name: `s${i + 1}`, baseUrl: simulator.url, apiKey: key }));
  writeFileSync(
    configFile,
    JSON.stringify({
      sources: sourceConfigs.map((s) => ({ name: s.name, base_url: s.baseUrl, api_key: s.apiKey })),
    }),
  );
  const measures: Record<string, number> = { sources };
  const failures: string[] = [];
  let reference: number | undefined;
  try {
    for (const count of options.workers) {
      const warehouse = await server.createDatabase();
      const workers: ChildProcess[] = [];
      const boss = await openQueue(warehouse.url, 'insights', QUEUE, silentLogger());
      try {
        await ensureSlots(
          warehouse.db,
          sourceConfigs.map((s) => s.name),
          PER_SOURCE,
        );
        for (let i = 0; i < count; i++) workers.push(startWorker(warehouse.url, configFile));
        // Timed from the moment every worker is taking jobs: the processes' start-up is not the queue's.
        await waitFor(async () => {
          const { rows } = await warehouse.pool.query(
            `select count(*)::int as n from ${bookkeepingSchema('insights')}.queue_workers`,
          );
          return rows[0]?.n === count;
        });
        const backfill = () =>
          runSync(
            {
              pool: warehouse.pool,
              db: warehouse.db,
              logger: silentLogger(),
              now: () => new Date(),
              sources: sourceConfigs,
              settings: settings(from),
              dispatch: queueDispatch({
                boss,
                url: warehouse.url,
                schema: 'insights',
                settings: QUEUE,
                pollMs: 50,
              }),
            },
            { trigger: 'backfill', range: { from, to }, resources: ['feedback', 'survey', 'recordings'] },
          );
        // The first backfill learns each server (bounds, server day, cap: a few wider requests per
        // source and resource); the timed one starts from what it stored, as every later run does.
        const learning = await backfill();
        if (learning.status !== 'ok')
          failures.push(`queue, ${count} workers: first run ended ${learning.status}`);
        await warehouse.pool.query(`delete from ${queueSchema('insights')}.job`);
        const before = await simulator.stats();
        const workerPids = workers.flatMap((w) => (w.pid === undefined ? [] : [w.pid]));
        const cpuBefore = {
          workers: cpuMsOf(workerPids),
          bench: process.cpuUsage(),
          backends: new Map((await backendPids(warehouse.pool)).map((pid) => [pid, processCpuMs(pid)])),
        };
        const started = performance.now();
        const result = await backfill();
        const wallMs = performance.now() - started;
        const stats = await simulator.stats();
        const benchCpu = process.cpuUsage(cpuBefore.bench);
        const cpu = {
          workers: cpuMsOf(workerPids) - cpuBefore.workers,
          // The planner and the simulator's thread: this process.
          bench: (benchCpu.user + benchCpu.system) / 1000,
          // Backends that ended meanwhile are not counted: the workers' pools keep theirs open.
          postgres: (await backendPids(warehouse.pool)).reduce(
            (sum, pid) => sum + processCpuMs(pid) - (cpuBefore.backends.get(pid) ?? 0),
            0,
          ),
        };
        const held = await warehouse.pool.query<{ ms: number }>(
          `select avg(extract(epoch from completed_on - started_on) * 1000)::float8 as ms from ${queueSchema('insights')}.job`,
        );
        measures[`jobMs${count}`] = held.rows[0]?.ms ?? Number.NaN;
        const windows = result.windows.length;
        const inFlight = Math.min(count * PER_WORKER, sources * PER_SOURCE);
        const idealMs = Math.ceil(windows / inFlight) * latencyMs;
        measures.windows = windows;
        measures[`idealMs${count}`] = idealMs;
        measures[`wallMs${count}`] = wallMs;
        measures[`overIdeal${count}`] = wallMs / idealMs;
        measures[`maxInFlight${count}`] = Math.max(...keys.map((k) => stats.byKey[k]?.maxInFlight ?? 0));
        reference ??= wallMs;
        if (count !== options.workers[0]) measures[`speedup${count}`] = reference / wallMs;
        if (result.status !== 'ok')
          failures.push(`queue, ${count} workers: run ended ${result.status}: ${result.error}`);
        if (windows !== sources * days * 3)
          failures.push(`queue: ${windows} windows, expected ${sources * days * 3}`);
        const requests = stats.requests - before.requests;
        measures[`requestsPerWindow${count}`] = requests / windows;
        measures[`cpuWorkers${count}`] = cpu.workers / windows;
        measures[`cpuPostgres${count}`] = cpu.postgres / windows;
        measures[`cpuBench${count}`] = cpu.bench / windows;
        measures[`coresBusy${count}`] = (cpu.workers + cpu.postgres + cpu.bench) / wallMs;
        if (requests < windows) failures.push(`queue: ${requests} requests for ${windows} windows`);
      } finally {
        for (const worker of workers) worker.kill('SIGTERM');
        await Promise.all(workers.map((w) => new Promise((resolve) => w.once('close', resolve))));
        await boss.stop({ graceful: false, wait: true, timeout: 1000 });
        await warehouse.drop();
      }
    }
  } finally {
    await simulator.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return { measures, failures };
}

/** BENCH_WORKER_NODE_ARGS: node options for the workers, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof". */
function startWorker(url: string, configFile: string): ChildProcess {
  const child = spawn(
    process.execPath,
    [...(process.env.BENCH_WORKER_NODE_ARGS?.split(' ') ?? []), BIN, 'worker'],
    {
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '/tmp',
        CI: 'true',
        LOG_LEVEL: 'error',
        DATABASE_URL: url,
        INSIGHTS_CONFIG: configFile,
        INSIGHTS_SOURCE_CONCURRENCY: String(PER_SOURCE),
        INSIGHTS_WORKER_CONCURRENCY: String(PER_WORKER),
        INSIGHTS_MAX_HEAP_MB: '0',
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  return child;
}

async function waitFor(check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('workers did not start within 60 s');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
