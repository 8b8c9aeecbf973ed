import { hostname } from 'node:os';
import type { Kysely } from 'kysely';
import type pg from 'pg';
import type PgBoss from 'pg-boss';
import type { ApiClient } from '../api/api-client.js';
import type { Config } from '../config/config.js';
import type { SourceConfig } from '../config/source-config.js';
import type { Database } from '../db/database.js';
import { LATEST_MIGRATION } from '../db/migrator.js';
import { CliError, errorMessage } from '../errors.js';
import type { Logger } from '../log/logger.js';
import type { WindowJobOutput } from '../queue/contract.js';
import { sourcesWithWaitingJobs } from '../queue/job-table.js';
import { openSlotSession, type SlotSession } from '../queue/source-slots.js';
import { jobTooNew, type WindowJob, windowQueueName } from '../queue/window-queue.js';
import { HEARTBEAT_MS } from '../queue/workers.js';
import type { WindowedResource } from '../schemas/resources.js';
import type { SourceHandle, SyncContext } from './context.js';
import { skippedWindow, type WindowOutcome } from './outcomes.js';
import { loadReadings, type SourceReadings, shareCheck, storeReading } from './reading-store.js';
import { budgetPace } from './request-budget.js';
import { defaultClient, type SyncDeps, type SyncSettings } from './run-sync.js';
import { runWindow } from './run-window.js';
import { defaultWindowBudget, windowMemory } from './window-memory.js';

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
  const { db, boss } = deps;
  // A job from a newer planner stops this worker too: the warehouse was migrated past it.
  let refusal: string | undefined;
  const refused = new AbortController();
  const signal = AbortSignal.any([deps.signal, refused.signal]);
  const workerId = `${hostname()}:${process.pid}:${Date.now().toString(36)}`.slice(0, 200);
  const logger = deps.logger.child({ workerId });
  const byName = new Map(deps.sources.map((s) => [s.name, s]));
  const names = [...byName.keys()];
  const pollMs = deps.pollMs ?? 200;
  const makeClient =
    deps.createClient ?? ((source, options) => defaultClient(source, deps.settings, options));
  const runs = new Map<string, Promise<RunSourceState>>();
  const counts = { done: 0, failed: 0 };
  // One budget for the worker's lanes: they share its heap.
  const memory = windowMemory(defaultWindowBudget());

  await db
    .insertInto('queue_workers')
    .values({
      worker_id: workerId,
      host: hostname(),
      pid: process.pid,
      concurrency: deps.settings.workerConcurrency,
    })
    .execute();
  const beat = () =>
    db
      .updateTable('queue_workers')
      .set({ last_seen_at: new Date(), windows_done: counts.done, windows_failed: counts.failed })
      .where('worker_id', '=', workerId)
      .execute()
      .catch((error: unknown) => logger.warn({ err: errorMessage(error) }, 'worker heartbeat failed'));
  const heartbeat = setInterval(() => void beat(), deps.heartbeatMs ?? HEARTBEAT_MS);

  const stateOf = (runId: number, source: string): Promise<RunSourceState> => {
    const key = `${runId}/${source}`;
    let state = runs.get(key);
    if (state === undefined) {
      state = loadReadings(db, source, runId).then((readings) => ({
        readings,
        fatal: false,
        refused: new Set<WindowedResource>(),
      }));
      runs.set(key, state);
      // Runs end; what a worker learned of an old one is not needed any more.
      if (runs.size > 64) runs.delete(runs.keys().next().value as string);
    }
    return state;
  };

  const runJob = async (job: PgBoss.Job<WindowJob>): Promise<void> => {
    const data = job.data;
    const queue = windowQueueName(data.source);
    const tooNew = jobTooNew(data, LATEST_MIGRATION);
    if (tooNew !== undefined) {
      // Failed, not completed: pg-boss offers it again, to a newer worker, while it has retries
      // left (INSIGHTS_QUEUE_RETRY_LIMIT); past them its window fails and the next run plans it again.
      await boss.fail(queue, job.id, { message: tooNew });
      refusal ??= tooNew;
      refused.abort();
      return;
    }
    const source = byName.get(data.source);
    if (source === undefined) {
      await boss.fail(queue, job.id, { message: `worker ${workerId} has no source named ${data.source}` });
      return;
    }
    const log = logger.child({ runId: data.runId });
    const statuses: Record<string, number> = {};
    let outcome: WindowOutcome;
    try {
      const state = await stateOf(data.runId, data.source);
      if (state.fatal || state.refused.has(data.resource)) {
        outcome = skippedWindow(data.source, data.resource, data.day);
      } else {
        const client: ApiClient = makeClient(source, {
          logger: log,
          pace: budgetPace(db, source),
          onResponse: (status) => {
            const key = status === null ? 'none' : String(status);
            statuses[key] = (statuses[key] ?? 0) + 1;
          },
        });
        const handle: SourceHandle = {
          name: source.name,
          baseUrl: client.baseUrl,
          client,
          knowledge: state.readings.knowledge,
          pii: source.pii,
        };
        const ctx: SyncContext = {
          pool: deps.pool,
          db,
          logger: log,
          now: () => new Date(),
          limits: { limit: deps.settings.limit, maxLimit: deps.settings.maxLimit },
          maxInvalidShare: deps.settings.maxInvalidShare,
          runId: data.runId,
          memory,
        };
        outcome = await runWindow(ctx, handle, data.resource, data.day, {
          today: data.today,
          startDay: data.startDay,
        });
        if (outcome.fatal) state.fatal = true;
        if (outcome.refused !== undefined) state.refused.add(data.resource);
        // Stored when a window taught something (most windows of a run change nothing), under the
        // one rule of every writer (reading-store.ts): another worker may have re-learned it since.
        await storeReading(db, state.readings, data.resource, { runId: data.runId, logger: log });
        // This worker made the run's check of the stored reading: the run's other workers need not.
        await shareCheck(db, state.readings, data.resource, { runId: data.runId, logger: log });
      }
    } catch (error) {
      // runWindow records its own failures; this is the unexpected: the job is offered again.
      counts.failed += 1;
      log.error({ err: errorMessage(error), day: data.day, resource: data.resource }, 'window job threw');
      await boss.fail(queue, job.id, { message: errorMessage(error) });
      return;
    }
    if (outcome.status === 'failed') counts.failed += 1;
    else counts.done += 1;
    const output: WindowJobOutput<WindowOutcome> = { outcome, statuses };
    await boss.complete(queue, job.id, output as unknown as object);
  };

  /**
   * This worker's sources that have jobs waiting, the one whose best job ranks highest first
   * (ties in a random order, so lanes spread over the sources). Read once per poll interval for
   * all lanes: the job table is not scanned once per window.
   */
  let waiting: { at: number; sources: Promise<string[]> } | undefined;
  const waitingSources = (): Promise<string[]> => {
    if (waiting === undefined || Date.now() - waiting.at > pollMs) {
      const sources = sourcesWithWaitingJobs(boss, deps.schema, names);
      waiting = { at: Date.now(), sources };
      sources.catch(() => {
        waiting = undefined;
      });
    }
    return waiting.sources;
  };

  const takeOne = async (session: SlotSession): Promise<boolean> => {
    let candidates = (await waitingSources()).filter((name) => byName.has(name));
    while (candidates.length > 0 && !signal.aborted) {
      const source = await session.tryClaimAny(candidates);
      if (source === undefined) return false;
      try {
        const [job] = await boss.fetch<WindowJob>(windowQueueName(source), { batchSize: 1 });
        if (job !== undefined) {
          await runJob(job);
          return true;
        }
      } finally {
        await session.release();
      }
      // Its jobs were taken meanwhile: the next source.
      candidates = candidates.filter((name) => name !== source);
    }
    return false;
  };

  const lane = async (): Promise<void> => {
    const session = await openSlotSession(deps.url, deps.schema);
    try {
      while (!signal.aborted) {
        const worked = await takeOne(session).catch((error: unknown) => {
          logger.warn({ err: errorMessage(error) }, 'worker lane error; trying again');
          return false;
        });
        if (!worked) await pause(pollMs, signal);
      }
    } finally {
      await session.close();
    }
  };

  logger.info(
    { sources: names.length, concurrency: deps.settings.workerConcurrency },
    'worker started: taking window jobs',
  );
  try {
    await Promise.all(Array.from({ length: deps.settings.workerConcurrency }, () => lane()));
  } finally {
    clearInterval(heartbeat);
    await db
      .updateTable('queue_workers')
      .set({
        last_seen_at: new Date(),
        stopped_at: new Date(),
        windows_done: counts.done,
        windows_failed: counts.failed,
      })
      .where('worker_id', '=', workerId)
      .execute()
      .catch(() => {});
  }
  if (refusal !== undefined) throw new CliError(refusal);
  logger.info(counts, 'worker stopped');
  return { workerId, ...counts };
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
