import { hostname } from 'node:os';
import type { Kysely } from 'kysely';
import type pg from 'pg';
import type { Job, PgBoss } from 'pg-boss';
import type { ApiClient } from '../api/api-client.js';
import type { Config } from '../config/config.js';
import type { SourceConfig } from '../config/source-config.js';
import type { Database } from '../db/database.js';
import { LATEST_MIGRATION } from '../db/migrator.js';
import { CliError, errorMessage } from '../errors.js';
import type { Logger } from '../log/logger.js';
import type { WindowJobOutput } from '../queue/contract.js';
import { sourcesWithWaitingJobs } from '../queue/job-table.js';
import { type ClaimedSlot, openSlotSession, type SlotSession } from '../queue/source-slots.js';
import { jobTooNew, type WindowJob, windowQueueName } from '../queue/window-queue.js';
import { HEARTBEAT_MS } from '../queue/workers.js';
import type { WindowedResource } from '../schemas/resources.js';
import type { SourceHandle, SyncContext } from './context.js';
import { RecentNeighbours } from './neighbours-stored.js';
import { countResponse, skippedWindow, type WindowOutcome } from './outcomes.js';
import {
  exchangeVerdicts,
  hearCaps,
  hearCheck,
  hearStored,
  loadReadings,
  relearnAndReopen,
  type SourceReadings,
  shareCheck,
  storeReading,
} from './reading-store.js';
import { budgetPace } from './request-budget.js';
import { defaultClient, type SyncDeps, type SyncSettings } from './run-sync.js';
import { runWindow } from './run-window.js';
import { defaultWindowBudget, type WindowMemory, windowMemory } from './window-memory.js';

export interface WorkerDeps {
  pool: pg.Pool;
  db: Kysely<Database>;
  /** The warehouse's connection string: each slot is held on a connection of its own. */
  url: string;
  schema: string;
  boss: PgBoss;
  logger: Logger;
  /** The sources this worker may run windows of (its own configuration holds their keys). */
  sources: readonly SourceConfig[];
  settings: SyncSettings & Pick<Config, 'workerConcurrency'>;
  /** Aborted on SIGTERM/SIGINT: no new job is taken; jobs in hand finish. */
  signal: AbortSignal;
  createClient?: SyncDeps['createClient'];
  /** How long an idle lane waits before looking for jobs again. Default 200 ms. */
  pollMs?: number;
  /** How often the heartbeat row is written. Default HEARTBEAT_MS. */
  heartbeatMs?: number;
}

export interface WorkerResult {
  workerId: string;
  done: number;
  failed: number;
}

/** The slot a job runs under: what was read with its claim, and the session holding it. */
interface HeldSlot {
  claimed: ClaimedSlot;
  session: SlotSession;
}

/** What a worker knows of one source during one run: shared by that run's windows of the source, as in process. */
interface RunSourceState {
  readings: SourceReadings;
  fatal: boolean;
  refused: Set<WindowedResource>;
}

/**
 * `insights-sync worker`: takes window jobs until stopped. Runs at most
 * INSIGHTS_WORKER_CONCURRENCY windows at once (one per lane), each under one of its source's
 * slots (src/queue/source-slots.ts), through the same window path as an in-process run
 * (runWindow -> storeWindow: items, ledger row and watermark in one transaction). A worker killed
 * mid-window commits nothing of it; its slot is freed with its connection, and its job expires
 * after INSIGHTS_QUEUE_EXPIRE_SECONDS and is taken again by another worker.
 */
export async function runWorker(deps: WorkerDeps): Promise<WorkerResult> {
  const workerId = `${hostname()}:${process.pid}:${Date.now().toString(36)}`.slice(0, 200);
  const worker = newWorker(deps, workerId);
  await registerWorker(deps.db, workerId, deps.settings.workerConcurrency);
  const heartbeat = setInterval(() => void beat(worker), deps.heartbeatMs ?? HEARTBEAT_MS);
  worker.logger.info(
    { sources: worker.byName.size, concurrency: deps.settings.workerConcurrency },
    'worker started: taking window jobs',
  );
  try {
    await Promise.all(worker.lanes.map((health) => lane(worker, health)));
  } finally {
    clearInterval(heartbeat);
    await deps.db
      .updateTable('queue_workers')
      .set({
        last_seen_at: new Date(),
        stopped_at: new Date(),
        windows_done: worker.counts.done,
        windows_failed: worker.counts.failed,
      })
      .where('worker_id', '=', workerId)
      .execute()
      .catch(() => {});
  }
  if (worker.refusal !== undefined) throw new CliError(worker.refusal);
  worker.logger.info(worker.counts, 'worker stopped');
  return { workerId, ...worker.counts };
}

/** One worker process while it runs: what its lanes share. */
interface Worker {
  deps: WorkerDeps;
  id: string;
  logger: Logger;
  byName: ReadonlyMap<string, SourceConfig>;
  /** Aborted on shutdown, and when a job from a newer planner was refused. */
  signal: AbortSignal;
  /** Why the worker stopped taking jobs: a job from a newer planner. */
  refusal?: string;
  refuse(reason: string): void;
  pollMs: number;
  makeClient: NonNullable<SyncDeps['createClient']>;
  runs: RunStates;
  /** Items of neighbouring days this worker's windows stored, per recent run and source. */
  neighbours: RecentNeighbours;
  counts: { done: number; failed: number };
  /** One budget for the worker's lanes: they share its heap. */
  memory: WindowMemory;
  waitingSources(): Promise<string[]>;
  /** Each lane's health, which the heartbeat reads (workerCanTakeJobs). */
  lanes: LaneHealth[];
}

/** Whether a lane can take jobs: its attempts that failed in a row (0: the last one worked). */
export interface LaneHealth {
  failures: number;
}

/** Longest a failing lane waits before it tries again (its connection opened anew). */
export const MAX_LANE_BACKOFF_MS = 30_000;

/**
 * How long a lane waits before its next look for jobs: the poll interval while all is well;
 * after failures in a row, twice as long for each, up to MAX_LANE_BACKOFF_MS. A lane that
 * retried at the poll interval logged 380 errors in 30 s, taking no job.
 */
export function laneDelayMs(failures: number, pollMs: number): number {
  if (failures <= 0) return pollMs;
  return Math.min(MAX_LANE_BACKOFF_MS, pollMs * 2 ** Math.min(failures, 20));
}

/**
 * Whether the worker's heartbeat may say it is alive: only while every lane's last attempt
 * worked. A worker whose lanes cannot reach the slots must not look alive to `status` and to
 * whoever supervises it, however well its other connections answer.
 */
export function workerCanTakeJobs(lanes: readonly LaneHealth[]): boolean {
  return lanes.every((health) => health.failures === 0);
}

function newWorker(deps: WorkerDeps, id: string): Worker {
  // A job from a newer planner stops this worker too: the warehouse was migrated past it.
  const refused = new AbortController();
  const byName = new Map(deps.sources.map((s) => [s.name, s]));
  const pollMs = deps.pollMs ?? 200;
  const worker: Worker = {
    deps,
    id,
    logger: deps.logger.child({ workerId: id }),
    byName,
    signal: AbortSignal.any([deps.signal, refused.signal]),
    refuse(reason) {
      worker.refusal ??= reason;
      refused.abort();
    },
    pollMs,
    makeClient: deps.createClient ?? ((source, options) => defaultClient(source, deps.settings, options)),
    runs: new RunStates((runId, source) => loadReadings(deps.db, source, runId)),
    neighbours: new RecentNeighbours(),
    counts: { done: 0, failed: 0 },
    memory: windowMemory(defaultWindowBudget()),
    waitingSources: waitingSourcesEvery(pollMs, () =>
      sourcesWithWaitingJobs(deps.boss, deps.schema, [...byName.keys()]),
    ),
    lanes: Array.from({ length: deps.settings.workerConcurrency }, () => ({ failures: 0 })),
  };
  return worker;
}

async function registerWorker(db: Kysely<Database>, workerId: string, concurrency: number): Promise<void> {
  await db
    .insertInto('queue_workers')
    .values({ worker_id: workerId, host: hostname(), pid: process.pid, concurrency })
    .execute();
}

function beat(worker: Worker): Promise<unknown> {
  // No beat while a lane cannot take jobs: the row goes stale, and the worker shows as dead.
  if (!workerCanTakeJobs(worker.lanes)) return Promise.resolve();
  return worker.deps.db
    .updateTable('queue_workers')
    .set({ last_seen_at: new Date(), windows_done: worker.counts.done, windows_failed: worker.counts.failed })
    .where('worker_id', '=', worker.id)
    .execute()
    .catch((error: unknown) => worker.logger.warn({ err: errorMessage(error) }, 'worker heartbeat failed'));
}

/** What the worker knows of each source of each run, read once per run and source. */
export class RunStates {
  private readonly runs = new Map<string, Promise<RunSourceState>>();

  constructor(private readonly load: (runId: number, source: string) => Promise<SourceReadings>) {}

  /** The runs this worker has windows of in hand or had lately, newest last. */
  runIds(): number[] {
    return [...new Set([...this.runs.keys()].map((key) => Number(key.slice(0, key.indexOf('/')))))];
  }

  of(runId: number, source: string): Promise<RunSourceState> {
    const key = `${runId}/${source}`;
    let state = this.runs.get(key);
    if (state === undefined) {
      state = this.load(runId, source).then((readings) => ({
        readings,
        fatal: false,
        refused: new Set<WindowedResource>(),
      }));
      this.runs.set(key, state);
      // Runs end; what a worker learned of an old one is not needed any more.
      if (this.runs.size > RUNS_KEPT) this.runs.delete(this.runs.keys().next().value as string);
    }
    return state;
  }
}
const RUNS_KEPT = 64;

/**
 * What a worker does with a job before running it: fail it back when it was planned by a newer
 * insights-sync (and stop taking jobs) or names a source the worker has no key for; else run it.
 */
export function jobVerdict(
  data: WindowJob,
  sources: ReadonlyMap<string, SourceConfig>,
  workerId: string,
  latestMigration: string,
): { fail: string; refuse: boolean } | { source: SourceConfig } {
  const tooNew = jobTooNew(data, latestMigration);
  if (tooNew !== undefined) return { fail: tooNew, refuse: true };
  const source = sources.get(data.source);
  if (source === undefined)
    return { fail: `worker ${workerId} has no source named ${data.source}`, refuse: false };
  return { source };
}

async function runJob(worker: Worker, job: Job<WindowJob>, slot: HeldSlot): Promise<void> {
  const { boss } = worker.deps;
  const data = job.data;
  const queue = windowQueueName(data.source);
  const verdict = jobVerdict(data, worker.byName, worker.id, LATEST_MIGRATION);
  if ('fail' in verdict) {
    // Failed, not completed: pg-boss offers it again, to a newer worker, while it has retries
    // left (INSIGHTS_QUEUE_RETRY_LIMIT); past them its window fails and the next run plans it again.
    await boss.fail(queue, job.id, { message: verdict.fail });
    if (verdict.refuse) worker.refuse(verdict.fail);
    return;
  }
  const log = worker.logger.child({ runId: data.runId });
  const statuses: Record<string, number> = {};
  let outcome: WindowOutcome;
  try {
    outcome = await runJobWindow(worker, data, verdict.source, log, statuses, slot);
  } catch (error) {
    // runWindow records its own failures; this is the unexpected: the job is offered again.
    worker.counts.failed += 1;
    log.error({ err: errorMessage(error), day: data.day, resource: data.resource }, 'window job threw');
    await boss.fail(queue, job.id, { message: errorMessage(error) });
    return;
  }
  if (outcome.status === 'failed') worker.counts.failed += 1;
  else worker.counts.done += 1;
  const output: WindowJobOutput<WindowOutcome> = { outcome, statuses };
  await boss.complete(queue, job.id, output as unknown as object);
}

/** The job's window, through the same path as in process, unless its run stopped its source or endpoint. */
async function runJobWindow(
  worker: Worker,
  data: WindowJob,
  source: SourceConfig,
  log: Logger,
  statuses: Record<string, number>,
  { claimed, session }: HeldSlot,
): Promise<WindowOutcome> {
  const { db, settings } = worker.deps;
  const state = await worker.runs.of(data.runId, data.source);
  if (state.fatal || state.refused.has(data.resource))
    return skippedWindow(data.source, data.resource, data.day);
  const client: ApiClient = worker.makeClient(source, {
    logger: log,
    pace: budgetPace(db, source),
    onResponse: (status) => countResponse(statuses, status),
  });
  const handle: SourceHandle = {
    name: source.name,
    baseUrl: client.baseUrl,
    client,
    knowledge: state.readings.knowledge,
    pii: source.pii,
    neighbours: worker.neighbours.of(data.runId, data.source),
  };
  const ctx: SyncContext = {
    pool: worker.deps.pool,
    db,
    logger: log,
    now: () => new Date(),
    limits: { limit: settings.limit, maxLimit: settings.maxLimit },
    maxInvalidShare: settings.maxInvalidShare,
    runId: data.runId,
    memory: worker.memory,
  };
  // A reading another worker proved stale settles nothing here: heard before and after the window,
  // before it from what was read with the slot where that asked about the job's run.
  const lastStale = claimed.runs.has(data.runId) ? (claimed.lastStale.get(data.runId) ?? 0) : undefined;
  await shareVerdicts(ctx, state.readings, data.resource, lastStale);
  // What the run's other workers found of the server (its check, quiet decision, largest answer),
  // read with the slot: not asked again here.
  const shared = claimed.checks.get(`${data.runId}/${data.resource}`);
  if (shared !== undefined) hearCheck(state.readings, data.resource, shared);
  // The caps the run knows, told on any resource's row: a cap is the source's server's.
  for (const [key, check] of claimed.checks)
    if (key.startsWith(`${data.runId}/`)) hearCaps(state.readings, check.caps);
  const outcome = await runWindow(ctx, handle, data.resource, data.day, {
    today: data.today,
    startDay: data.startDay,
    emptyBefore: data.emptyBefore === true,
    itemsBefore: data.itemsBefore ?? 0,
  });
  // Shared while the slot is held, so that the source's next window, on whichever worker, finds it
  // (a reading this worker re-learned is stored first: that part waits until after the store).
  // Told again below should this fail.
  await shareCheck(db, state.readings, data.resource, { runId: data.runId, logger: log }, true).catch(
    () => {},
  );
  // Its requests done, the window's slot is let go, and what was heard since read with it: what
  // is left (the reading stored, the job completed) asks nothing of the source.
  // A slot connection that failed here fails no stored window: its lane finds it broken and opens
  // another, and the verdicts are read from the pool instead.
  const heard = await session.release({ runId: data.runId, source: data.source }).catch(() => undefined);
  await shareVerdicts(ctx, state.readings, data.resource, heard?.lastStale);
  if (heard !== undefined) hearStored(state.readings, heard.readings);
  if (outcome.fatal) state.fatal = true;
  if (outcome.refused !== undefined) state.refused.add(data.resource);
  // Stored when a window taught something (most windows of a run change nothing), under the
  // one rule of every writer (reading-store.ts): another worker may have re-learned it since.
  await storeReading(db, state.readings, data.resource, { runId: data.runId, logger: log });
  // What this worker found for the run (its check of the stored reading, the quiet decision, a
  // larger answer): the run's other workers need not ask it again.
  await shareCheck(db, state.readings, data.resource, { runId: data.runId, logger: log });
  return outcome;
}

/**
 * Tells the run's other workers this one's stale verdicts and hears theirs, on any resource of
 * the source (reading-store.ts): on one newer than this resource's reading, it is learned again
 * here and the days this worker settled since its last proof are reopened in the ledger (the run
 * reads them again).
 */
async function shareVerdicts(
  ctx: SyncContext,
  readings: SourceReadings,
  resource: WindowedResource,
  lastStale?: number,
): Promise<void> {
  const runId = ctx.runId;
  if (
    runId === null ||
    !(await exchangeVerdicts(ctx.db, readings, resource, { runId, logger: ctx.logger }, lastStale))
  )
    return;
  const knowledge = readings.knowledge[resource];
  const key = { sourceId: readings.source, resource };
  const reopened = await relearnAndReopen(ctx.pool, key, knowledge, () => {
    // Learned again because another said so: not this worker's verdict to tell.
    readings.verdicts.set(resource, {
      told: knowledge.relearned ?? 0,
      heard: readings.verdicts.get(resource)?.heard ?? 0,
    });
  });
  ctx.logger.warn(
    { source: readings.source, resource, reopened },
    "a worker found a reading of the source's server stale: this resource's learned again, the days settled since reopened",
  );
}

/**
 * This worker's sources that have jobs waiting, the one whose best job ranks highest first
 * (ties in a random order, so lanes spread over the sources). Read once per poll interval for
 * all lanes: the job table is not scanned once per window.
 */
function waitingSourcesEvery(pollMs: number, read: () => Promise<string[]>): () => Promise<string[]> {
  let waiting: { at: number; sources: Promise<string[]> } | undefined;
  return () => {
    if (waiting === undefined || Date.now() - waiting.at > pollMs) {
      const sources = read();
      waiting = { at: Date.now(), sources };
      sources.catch(() => {
        waiting = undefined;
      });
    }
    return waiting.sources;
  };
}

async function takeOne(worker: Worker, session: SlotSession): Promise<boolean> {
  let candidates = (await worker.waitingSources()).filter((name) => worker.byName.has(name));
  while (candidates.length > 0 && !worker.signal.aborted) {
    const claimed = await session.tryClaimAny(candidates, worker.runs.runIds());
    if (claimed === undefined) return false;
    const { source } = claimed;
    try {
      const [job] = await worker.deps.boss.fetch<WindowJob>(windowQueueName(source), { batchSize: 1 });
      if (job !== undefined) {
        await runJob(worker, job, { claimed, session });
        return true;
      }
    } finally {
      await session.release();
    }
    // Its jobs were taken meanwhile: the next source.
    candidates = candidates.filter((name) => name !== source);
  }
  return false;
}

/**
 * One window at a time, on a slot session of its own. The session is opened anew when its
 * connection broke (a killed backend, a restarted server: a pg client never reconnects) and after
 * any failure, whose transaction state is unknown; failures in a row back off (laneDelayMs) and
 * stop the heartbeat until an attempt works again.
 */
async function lane(worker: Worker, health: LaneHealth): Promise<void> {
  let session: SlotSession | undefined;
  try {
    while (!worker.signal.aborted) {
      let worked = false;
      try {
        if (session?.broken) {
          await session.close();
          session = undefined;
        }
        session ??= await openSlotSession(worker.deps.url, worker.deps.schema);
        worked = await takeOne(worker, session);
        health.failures = 0;
      } catch (error) {
        health.failures += 1;
        await session?.close();
        session = undefined;
        const retryInMs = laneDelayMs(health.failures, worker.pollMs);
        worker.logger.warn(
          { err: errorMessage(error), failures: health.failures, retryInMs },
          'worker lane error; trying again',
        );
      }
      if (!worked) await pause(laneDelayMs(health.failures, worker.pollMs), worker.signal);
    }
  } finally {
    await session?.close();
  }
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
