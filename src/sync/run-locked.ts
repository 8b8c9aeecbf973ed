import type { Kysely } from 'kysely';
import type pg from 'pg';
import type { Config } from '../config/config.js';
import { closeAtForcedExit, createDb, createPool, describeServer } from '../db/connection.js';
import type { Database } from '../db/database.js';
import { describeHolder } from '../db/lock-holder.js';
import { acquireRunLock } from '../db/run-lock.js';
import { errorMessage } from '../errors.js';
import type { Logger } from '../log/logger.js';
import type { WindowDispatch } from '../queue/contract.js';
import type { SourceHandle } from './context.js';
import { type RunResult, summarize, type WindowOutcome } from './outcomes.js';
import { beatRun, interruptAbandonedRuns, interruptRun, RUN_HEARTBEAT_MS } from './run-log.js';
import { runSync, type SyncRequest } from './run-sync.js';

/** The open warehouse a run works on: its pool and Kysely instance, and the URL the lock connects to. */
export interface RunWarehouse {
  pool: pg.Pool;
  db: Kysely<Database>;
  /** The connection string, password included: to connect with, never to print. */
  url: string;
}

export interface RunContext {
  config: Readonly<Config>;
  logger: Logger;
}

export interface LockedRunOptions {
  /** Queue behind a run that holds the warehouse lock instead of failing with LockError (--wait). */
  wait?: boolean;
  /** Appended to the message when the lock is busy (default: rerun with --wait). */
  busyHint?: string;
  /** Shutdown: ends a wait, and the run takes no new windows. */
  signal?: AbortSignal;
  /** Called once the lock is held: from then on, a run left 'running' in the log is ours. */
  onLocked?: (warehouse: RunWarehouse, schema: string) => void;
  /** Called right before the lock is released. */
  onReleasing?: () => void;
  onPlan?: (totalWindows: number, runId: number) => void;
  onWindow?: (outcome: WindowOutcome, done: number, total: number) => void;
  /** `--queue`: the windows go to `worker` processes as jobs (src/sync/queue-dispatch.ts). */
  queue?: boolean;
  /** The caller shows the run's table on a terminal: see SyncDeps.summaryShown. */
  summaryShown?: boolean;
}

/**
 * One run under the warehouse lock, the way every command runs one (sync, backfill, schedule,
 * demo): the lock first, before any API client exists, so a second run makes no request at all;
 * then the log is cleaned of runs a killed process left 'running'; then the run; then the lock
 * is released (it also dies with the process).
 *
 * A queued run holds the lock while it plans and enqueues, and lets it go while its jobs run,
 * with a heartbeat on its row instead: the nightly sync can then start while a long backfill is
 * queued, and its jobs go ahead of the backfill's (they have the higher priority). Two planners
 * still never plan at once.
 */
export async function runLocked(
  warehouse: RunWarehouse,
  { config, logger }: RunContext,
  request: SyncRequest,
  options: LockedRunOptions = {},
): Promise<RunResult> {
  let heartbeat: NodeJS.Timeout | undefined;
  const lock = await acquireRunLock({
    url: warehouse.url,
    schema: config.schema,
    wait: options.wait ?? false,
    signal: options.signal,
    busyHint: options.busyHint,
    onWait: (holder) => logger.warn(`${describeHolder(config.schema, holder)}; waiting for it (--wait)`),
  });
  try {
    options.onLocked?.(warehouse, config.schema);
    const abandoned = await interruptAbandonedRuns(
      warehouse.db,
      'the process running it ended without recording the end (killed, or its machine stopped)',
    );
    if (abandoned.length > 0)
      logger.warn({ runIds: abandoned }, 'runs left running by a process that ended are marked interrupted');
    const signals = [options.signal, lock.lost].filter((s): s is AbortSignal => s !== undefined);
    const detach = async (runId: number) => {
      await beatRun(warehouse.db, runId);
      heartbeat = setInterval(() => {
        beatRun(warehouse.db, runId).catch((error: unknown) =>
          logger.warn(
            { err: error instanceof Error ? error.message : String(error) },
            'run heartbeat failed',
          ),
        );
      }, RUN_HEARTBEAT_MS);
      heartbeat.unref();
      await lock.release();
      logger.info({ runId }, 'windows queued: the run lock is free while the workers run them');
    };
    const queued =
      options.queue === true ? await openDispatch(warehouse, config, request, logger, detach) : undefined;
    try {
      const result = await runSync(
        {
          pool: warehouse.pool,
          db: warehouse.db,
          logger,
          now: () => new Date(),
          sources: config.sources,
          settings: config,
          signal: AbortSignal.any(signals),
          onPlan: options.onPlan,
          onWindow: options.onWindow,
          summaryShown: options.summaryShown,
          dispatch: queued?.dispatch,
        },
        request,
      );
      // The lock went first (an operator ended its session): not a signal of this host's.
      return lock.lost.aborted && options.signal?.aborted !== true
        ? { ...result, lockLost: lockLoss(warehouse.url, config.schema, lock.lost.reason) }
        : result;
    } finally {
      await queued?.close();
    }
  } finally {
    clearInterval(heartbeat);
    options.onReleasing?.();
    await lock.release();
  }
}

/**
 * The one line of a run whose lock's connection the server ended: which database (never its
 * user or password), which lock, why, and that what the run committed stays.
 */
export function lockLoss(url: string, schema: string, reason: unknown): string {
  return `lost the connection to the database at ${describeServer(url)} that held the run lock on schema ${schema} (${errorMessage(reason)}); the run stopped taking windows and is recorded interrupted: what it committed stays loaded, the next run takes the rest. If nobody ended that session (pg_terminate_backend), check the server's log`;
}

/**
 * The queue for one run: pg-boss opened (its schema created on first use), and each source of
 * the run given its INSIGHTS_SOURCE_CONCURRENCY slots. Loaded only by a queued run.
 */
async function openDispatch(
  warehouse: RunWarehouse,
  config: Readonly<Config>,
  request: SyncRequest,
  logger: Logger,
  onQueued: (runId: number) => Promise<void>,
): Promise<{ dispatch: WindowDispatch<SourceHandle, WindowOutcome>; close: () => Promise<void> }> {
  const [{ openQueue }, { ensureSlots }, { queueDispatch }] = await Promise.all([
    import('../queue/window-queue.js'),
    import('../queue/source-slots.js'),
    import('./queue-dispatch.js'),
  ]);
  const sources = config.sources
    .map((s) => s.name)
    .filter((name) => request.sources === undefined || request.sources.includes(name));
  await ensureSlots(warehouse.db, sources, config.sourceConcurrency);
  const boss = await openQueue(warehouse.url, config.schema, config, logger);
  return {
    dispatch: queueDispatch({ boss, url: warehouse.url, schema: config.schema, settings: config, onQueued }),
    close: () => boss.stop({ graceful: false, timeout: 1000 }),
  };
}

/**
 * What a forced exit (grace period over, second signal) records: the run in progress becomes
 * interrupted, with the counts of the windows committed so far. Only the run this process
 * started, between taking the lock and the end of the run.
 */
export function forcedExitRecorder() {
  let locked: { warehouse: RunWarehouse; schema: string } | undefined;
  let runId: number | undefined;
  let finished: WindowOutcome[] = [];
  return {
    hooks: {
      onLocked: (warehouse: RunWarehouse, schema: string) => {
        locked = { warehouse, schema };
        runId = undefined;
        finished = [];
      },
      onPlan: (_total: number, id: number) => {
        runId = id;
      },
      onReleasing: () => {
        locked = undefined;
      },
      onWindow: (outcome: WindowOutcome) => {
        finished.push(outcome);
      },
    },
    async onForce(reason: string): Promise<void> {
      if (locked === undefined) return;
      const { warehouse, schema } = locked;
      // The run's windows in flight must not commit after the exit: their sessions are ended,
      // and the run is recorded from a connection of its own (the pool's may all be stuck).
      const closed = closeAtForcedExit(warehouse.pool, warehouse.url);
      if (runId !== undefined) {
        const own = createPool({ url: warehouse.url, schema, max: 1 });
        const note = `${reason}: windows in flight were rolled back`;
        await interruptRun(createDb(own), runId, note, summarize(finished, [])).finally(() => own.end());
      }
      await closed;
    },
  };
}
