/**
 * The queue: a latency-bound backfill of `sources` sources through `backfill --queue`'s
 * code (runSync with the queue's dispatch), its windows run by 1, 2 and 4 `worker` processes
 * (the dev CLI, each INSIGHTS_WORKER_CONCURRENCY=4), every source allowing 2 windows in flight
 * (INSIGHTS_SOURCE_CONCURRENCY=2). The simulator answers after a fixed latency on a thread of its
 * own, each source with its own key, and counts each key's requests in flight. With W windows and
 * at most min(workers x 4, sources x 2) in flight, the ideal is ceil(W / in flight) x latency.
 * The server is learned once per latency, by an untimed backfill into a warehouse that each
 * worker count's timed run then gets a copy of (learning it again per count doubled the time).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { bookkeepingSchema, queueSchema } from '../src/db/bookkeeping.js';
import { silentLogger } from '../src/log/logger.js';
import { ensureSlots } from '../src/queue/source-slots.js';
import { openQueue, type QueueSettings } from '../src/queue/window-queue.js';
import { queueDispatch } from '../src/sync/queue-dispatch.js';
import { runSync, type SyncSettings } from '../src/sync/run-sync.js';
import { addDays, todayUtc } from '../src/time/days.js';
import { cpuMsOf, sampleBackendCpu } from './cpu.js';
import { BENCH_SCHEMA, type BenchDatabase, type BenchServer } from './database.js';
import { startSimulatorThread } from './extraction.js';
import type { Benchmark, FigureSpec, RunResult } from './figures.js';

export interface QueueBenchOptions {
  days: number;
  sources: number;
  /**
   * Each a backfill of its own with every worker count. A latency is what makes the backfill
   * latency-bound: with too short a one for the machine's cores, the workers, PostgreSQL and the
   * simulator wait for a core rather than for the server (the "cores kept busy" figure says which).
   */
  latencies: number[];
  /** Worker process counts measured, the first the reference of the speedups. */
  workers: number[];
}

const PER_SOURCE = 2;
const PER_WORKER = 4;
/** Days of the untimed warm-up before each timed backfill, per worker: 9 windows of each source. */
const WARM_DAYS_PER_WORKER = 3;
const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const BIN = path.join(ROOT, 'bin', 'insights-sync-dev.js');

const SPEEDUP_TARGETS: Record<number, number> = { 2: 1.8, 4: 3.5 };
/**
 * The CPU a window may cost in all, at about 20 items a window: 16 windows in flight at 200 ms are
 * 80 windows a second, which 2 cores serve at 4 workers only if each costs at most this. Judged
 * where it matters, the most workers at the shortest latency.
 */
const CPU_PER_WINDOW_MS = 10;

export const queue: Benchmark<QueueBenchOptions> = {
  name: 'queue',
  targets: 'queue',
  figures: ({ workers, sources, latencies }) => [
    { key: 'windows', label: 'windows (sources x days x 3 resources)', unit: '', digits: 0 },
    ...latencies.flatMap((latency) =>
      workerFigures(workers, latency, latency === Math.min(...latencies) ? workers.at(-1) : undefined),
    ),
    { key: 'sources', label: `sources (${sources}, each ${PER_SOURCE} in flight)`, unit: '', digits: 0 },
  ],
};

/**
 * Where PostgreSQL's part of the judged run goes: its backends' statements, sampled
 * (sampleStatements), by what they do. The rest of PostgreSQL's share is the statements that
 * read the ledger, the stored readings and the run.
 */
function statementFigures(at: string, key: (name: string) => string): FigureSpec[] {
  return [
    {
      key: key('pgStoreShare'),
      label: `${at}: of PostgreSQL's time in statements (sampled), storing windows (store_window)`,
      unit: '%',
      digits: 1,
    },
    {
      key: key('pgQueueShare'),
      label: `${at}: of it, the queue's statements (pg-boss's jobs, the slots, the shared checks)`,
      unit: '%',
      digits: 1,
    },
    {
      key: key('pgFlushShare'),
      label: `${at}: of it, waiting for the WAL to be flushed (a commit)`,
      unit: '%',
      digits: 1,
    },
    {
      key: key('pgLockShare'),
      label: `${at}: of it, waiting for a lock another holds`,
      unit: '%',
      digits: 1,
    },
  ];
}

/** A measure's key: the worker count and the latency it was measured with. */
const key = (name: string, workers: number, latency: number) => `${name}${workers}at${latency}`;

/** `cpuJudged`: the worker count whose CPU per window in all is held to its target. */
function workerFigures(workers: readonly number[], latency: number, cpuJudged?: number): FigureSpec[] {
  const at = (n: number) => `${latency} ms, ${n} worker${n === 1 ? '' : 's'}`;
  return workers.flatMap((n): FigureSpec[] => [
    {
      key: key('idealMs', n, latency),
      label: `${at(n)}: ideal ceil(windows / in flight) x latency`,
      unit: 'ms',
      digits: 0,
    },
    {
      key: key('wallMs', n, latency),
      label: `${at(n)}: backfill wall time (once learned)`,
      unit: 'ms',
      digits: 0,
    },
    {
      key: key('requestsPerWindow', n, latency),
      label: `${at(n)}: requests per window`,
      unit: '',
      digits: 3,
    },
    { key: key('overIdeal', n, latency), label: `${at(n)}: wall time / ideal`, unit: 'x', digits: 3 },
    {
      key: key('jobMs', n, latency),
      label: `${at(n)}: mean time a worker holds a job (taken to completed)`,
      unit: 'ms',
      digits: 0,
    },
    ...(n === workers[0]
      ? []
      : [
          {
            key: key('speedup', n, latency),
            label: `${at(n)}: speedup over ${workers[0]}`,
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
      key: key('cpuWorkers', n, latency),
      label: `${at(n)}: CPU per window, worker processes`,
      unit: 'ms',
      digits: 1,
    },
    {
      key: key('cpuPostgres', n, latency),
      label: `${at(n)}: CPU per window, PostgreSQL`,
      unit: 'ms',
      digits: 1,
    },
    {
      key: key('cpuBench', n, latency),
      label: `${at(n)}: CPU per window, planner and simulator`,
      unit: 'ms',
      digits: 1,
    },
    {
      key: key('cpuTotal', n, latency),
      label: `${at(n)}: CPU per window in all (the three above)`,
      unit: 'ms',
      digits: 1,
      ...(n === cpuJudged
        ? { target: { text: `≤ ${CPU_PER_WINDOW_MS} ms`, met: (s) => s.median <= CPU_PER_WINDOW_MS } }
        : {}),
    },
    ...(n === cpuJudged ? statementFigures(at(n), (name) => key(name, n, latency)) : []),
    {
      key: key('coresBusy', n, latency),
      label: `${at(n)}: cores kept busy (CPU time / wall time, of ${availableParallelism()})`,
      unit: '',
      digits: 2,
    },
    {
      key: key('maxInFlight', n, latency),
      label: `${at(n)}: most requests in flight for one source (simulator, per key)`,
      unit: '',
      digits: 0,
      target: { text: `≤ ${PER_SOURCE} in every run`, met: (s) => s.max <= PER_SOURCE },
    },
  ]);
}

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
  const measures: Record<string, number> = { sources: options.sources };
  const failures: string[] = [];
  for (const latency of options.latencies) await runAtLatency(server, options, latency, measures, failures);
  return { measures, failures };
}

/** What every worker count's run at one latency shares: the simulator, the sources, the days. */
interface AtLatency {
  latencyMs: number;
  from: string;
  to: string;
  keys: string[];
  sources: { name: string; baseUrl: string; apiKey: string }[];
  configFile: string;
  simulator: Awaited<ReturnType<typeof startSimulatorThread>>;
}

async function runAtLatency(
  server: BenchServer,
  options: QueueBenchOptions,
  latencyMs: number,
  measures: Record<string, number>,
  failures: string[],
): Promise<void> {
  const { days, sources } = options;
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
  const at: AtLatency = { latencyMs, from, to, keys, sources: sourceConfigs, configFile, simulator };
  const fail = (count: number, text: string) =>
    failures.push(`queue, ${latencyMs} ms, ${count} workers: ${text}`);
  try {
    const learned = await learnedWarehouse(server, at, Math.max(...options.workers), fail);
    try {
      let reference: number | undefined;
      for (const count of options.workers) {
        // A copy of the learned warehouse: every worker count starts from the same stored reading
        // and the same stored days, as a later run over those days does.
        const warehouse = await server.createDatabase({ from: learned });
        try {
          const wallMs = await withWorkers(warehouse, at, count, (backfill, workers) =>
            timedBackfill(warehouse, at, {
              options,
              count,
              backfill,
              workers,
              measures,
              fail,
              adminUrl: server.adminUrl,
            }),
          );
          reference ??= wallMs;
          if (count !== options.workers[0]) measures[key('speedup', count, latencyMs)] = reference / wallMs;
        } finally {
          await warehouse.drop();
        }
      }
    } finally {
      await learned.drop();
    }
  } finally {
    await simulator.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The first backfill learns each server (bounds, server day, cap: a few wider requests per source
 * and resource) and stores the days; run once per latency, by `count` workers, untimed, into a
 * warehouse that each timed run then gets a copy of. Closed, as copying it needs.
 */
async function learnedWarehouse(
  server: BenchServer,
  at: AtLatency,
  count: number,
  fail: (count: number, text: string) => void,
): Promise<BenchDatabase> {
  const learned = await server.createDatabase();
  try {
    const learning = await withWorkers(learned, at, count, (backfill) => backfill());
    if (learning.status !== 'ok') fail(count, `the learning run ended ${learning.status}`);
    // Its jobs and its workers' heartbeats are not the timed runs': each starts with its own.
    await learned.pool.query(`delete from ${queueSchema('insights')}.job`);
    await learned.pool.query(`delete from ${bookkeepingSchema('insights')}.queue_workers`);
    await learned.db.destroy();
    return learned;
  } catch (error) {
    await learned.drop();
    throw error;
  }
}

/** A backfill through the queue, of every day by default. */
type Backfill = (range?: { from: string; to: string }) => ReturnType<typeof runSync>;

/**
 * `count` worker processes on `warehouse`, every one taking jobs, while `fn` runs backfills
 * through the queue; stopped after it.
 */
async function withWorkers<T>(
  warehouse: BenchDatabase,
  at: AtLatency,
  count: number,
  fn: (backfill: Backfill, workers: ChildProcess[]) => Promise<T>,
): Promise<T> {
  const workers: ChildProcess[] = [];
  const boss = await openQueue(warehouse.url, 'insights', QUEUE, silentLogger());
  try {
    await ensureSlots(
      warehouse.db,
      at.sources.map((s) => s.name),
      PER_SOURCE,
    );
    for (let i = 0; i < count; i++) workers.push(startWorker(warehouse.url, at.configFile));
    // Timed from the moment every worker is taking jobs: the processes' start-up is not the queue's.
    await waitFor(async () => {
      const { rows } = await warehouse.pool.query(
        `select count(*)::int as n from ${bookkeepingSchema('insights')}.queue_workers`,
      );
      return rows[0]?.n === count;
    });
    const backfill = (range = { from: at.from, to: at.to }) =>
      runSync(
        {
          pool: warehouse.pool,
          db: warehouse.db,
          logger: silentLogger(),
          now: () => new Date(),
          sources: at.sources,
          settings: settings(at.from),
          dispatch: queueDispatch({
            boss,
            url: warehouse.url,
            schema: 'insights',
            settings: QUEUE,
            pollMs: 50,
          }),
        },
        {
          trigger: 'backfill',
          range,
          resources: ['feedback', 'survey', 'recordings'],
        },
      );
    return await fn(backfill, workers);
  } finally {
    for (const worker of workers) worker.kill('SIGTERM');
    await Promise.all(workers.map((w) => new Promise((resolve) => w.once('close', resolve))));
    await boss.stop({ graceful: false, timeout: 1000 });
  }
}

/** The timed backfill of `count` workers, its figures into `measures`; returns its wall time. */
async function timedBackfill(
  warehouse: BenchDatabase,
  at: AtLatency,
  run: {
    options: QueueBenchOptions;
    count: number;
    backfill: Backfill;
    workers: ChildProcess[];
    measures: Record<string, number>;
    fail: (count: number, text: string) => void;
    /** The server's admin database, where the statements are sampled from. */
    adminUrl: string;
  },
): Promise<number> {
  const { options, count, measures } = run;
  const m = (name: string) => key(name, count, at.latencyMs);
  // The processes and their connections are new, where a worker that served the learning run was
  // not: a short backfill of the last days first, untimed, so that the timed one finds its code
  // compiled and its connections open, as a long-lived worker does.
  const warmDays = Math.min(WARM_DAYS_PER_WORKER * count, options.days);
  const warm = await run.backfill({ from: addDays(at.to, -(warmDays - 1)), to: at.to });
  if (warm.status !== 'ok') run.fail(count, `the warm-up run ended ${warm.status}`);
  await warehouse.pool.query(`delete from ${queueSchema('insights')}.job`);
  const before = await at.simulator.stats();
  const workerPids = run.workers.flatMap((w) => (w.pid === undefined ? [] : [w.pid]));
  const backends = sampleBackendCpu(warehouse.name);
  const statements = sampleStatements(run.adminUrl, warehouse.name);
  const cpuBefore = { workers: cpuMsOf(workerPids), bench: process.cpuUsage() };
  const started = performance.now();
  const result = await run.backfill().finally(() => statements.stop());
  const wallMs = performance.now() - started;
  const sampled = await statements.done;
  measures[m('pgStoreShare')] = percentOf(sampled.store, sampled.active);
  measures[m('pgQueueShare')] = percentOf(sampled.queue, sampled.active);
  measures[m('pgFlushShare')] = percentOf(sampled.flushing, sampled.active);
  measures[m('pgLockShare')] = percentOf(sampled.locked, sampled.active);
  // How many backends in a statement the sampler saw in all: what the shares are of.
  measures[m('pgSampled')] = sampled.active;
  const stats = await at.simulator.stats();
  const benchCpu = process.cpuUsage(cpuBefore.bench);
  const postgres = backends.stop();
  const cpu = {
    workers: cpuMsOf(workerPids) - cpuBefore.workers,
    // The planner and the simulator's thread: this process, less its sampling of the backends.
    bench: (benchCpu.user + benchCpu.system) / 1000 - postgres.samplerMs,
    // Every backend of the database, those that ended meanwhile (a pool's idle ones) included.
    postgres: postgres.cpuMs,
  };
  const held = await warehouse.pool.query<{ ms: number }>(
    `select avg(extract(epoch from completed_on - started_on) * 1000)::float8 as ms from ${queueSchema('insights')}.job`,
  );
  const windows = result.windows.length;
  const inFlight = Math.min(count * PER_WORKER, options.sources * PER_SOURCE);
  const idealMs = Math.ceil(windows / inFlight) * at.latencyMs;
  const requests = stats.requests - before.requests;
  measures.windows = windows;
  measures[m('jobMs')] = held.rows[0]?.ms ?? Number.NaN;
  measures[m('idealMs')] = idealMs;
  measures[m('wallMs')] = wallMs;
  measures[m('overIdeal')] = wallMs / idealMs;
  // Since the simulator started: the learning run is held to it too.
  measures[m('maxInFlight')] = Math.max(...at.keys.map((k) => stats.byKey[k]?.maxInFlight ?? 0));
  measures[m('requestsPerWindow')] = requests / windows;
  measures[m('cpuWorkers')] = cpu.workers / windows;
  measures[m('cpuPostgres')] = cpu.postgres / windows;
  measures[m('cpuBench')] = cpu.bench / windows;
  measures[m('cpuTotal')] = (cpu.workers + cpu.postgres + cpu.bench) / windows;
  measures[m('coresBusy')] = (cpu.workers + cpu.postgres + cpu.bench) / wallMs;
  if (result.status !== 'ok') run.fail(count, `run ended ${result.status}: ${result.error}`);
  if (windows !== options.sources * options.days * 3)
    run.fail(count, `${windows} windows, expected ${options.sources * options.days * 3}`);
  if (requests < windows) run.fail(count, `${requests} requests for ${windows} windows`);
  return wallMs;
}

/** What the backends of one database were doing, summed over samples: in a statement, and in which. */
interface StatementSamples {
  active: number;
  store: number;
  queue: number;
  /** Waiting for the WAL to reach the disk: a commit, its own flush or another's it waits behind. */
  flushing: number;
  /** Waiting for a lock another backend holds (a row's, a relation's, a buffer's), not the WAL's. */
  locked: number;
}

/**
 * Samples pg_stat_activity every SAMPLE_MS while the timed backfill runs: the backends of
 * `database` in a statement, those storing a window, those in the queue's own statements (named
 * by its schema or its tables in the bookkeeping schema), those waiting for the WAL to be flushed
 * (LWLock WALWrite behind another's flush, IO WALWrite or WALSync in their own) and those waiting
 * for any other lock. Asked on
 * the server's admin database, so that the sampler's own backend is none of the warehouse's,
 * whose CPU the run counts.
 */
function sampleStatements(
  adminUrl: string,
  database: string,
): { stop: () => void; done: Promise<StatementSamples> } {
  const pool = new pg.Pool({ connectionString: adminUrl, max: 1 });
  const queueNames = `${queueSchema(BENCH_SCHEMA)}|queue_slots|queue_run_checks|queue_workers`;
  let stopped = false;
  const samples: StatementSamples = { active: 0, store: 0, queue: 0, flushing: 0, locked: 0 };
  const done = (async () => {
    try {
      while (!stopped) {
        const { rows } = await pool.query<StatementSamples>(
          `select count(*)::int as active,
                  count(*) filter (where query ilike 'select store_window(%')::int as store,
                  count(*) filter (where query ~ $2)::int as queue,
                  count(*) filter (where wait_event in ('WALWrite', 'WALSync'))::int as flushing,
                  count(*) filter (where wait_event_type = 'Lock'
                                      or (wait_event_type = 'LWLock' and wait_event <> 'WALWrite'))::int as locked
             from pg_stat_activity
            where datname = $1 and state = 'active' and pid <> pg_backend_pid()`,
          [database, queueNames],
        );
        for (const name of ['active', 'store', 'queue', 'flushing', 'locked'] as const)
          samples[name] += rows[0]?.[name] ?? 0;
        await sleep(SAMPLE_MS);
      }
      return samples;
    } finally {
      await pool.end();
    }
  })();
  // Awaited once the run has ended well; a run that failed leaves it unobserved, and its own error
  // is the one to report.
  done.catch(() => {});
  return {
    stop: () => {
      stopped = true;
    },
    done,
  };
}
const SAMPLE_MS = 20;

function percentOf(part: number, whole: number): number {
  return whole === 0 ? Number.NaN : (100 * part) / whole;
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
    await sleep(100);
  }
}
