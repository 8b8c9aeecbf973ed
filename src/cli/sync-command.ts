import type { Kysely } from 'kysely';
import type { Database } from '../db/database.js';
import { acquireRunLock, describeHolder } from '../db/run-lock.js';
import type { Logger } from '../log/logger.js';
import type { RunResult } from '../sync/outcomes.js';
import { summarize, type WindowOutcome } from '../sync/outcomes.js';
import { planBackfillDays } from '../sync/plan.js';
import { interruptRunningRuns } from '../sync/run-log.js';
import { runSync, type SyncRequest } from '../sync/run-sync.js';
import { todayUtc } from '../time/days.js';
import type { CommandContext } from './command-context.js';
import { printRun } from './print-run.js';
import { createProgress, type RunProgress } from './progress.js';
import { shutdownSignal } from './run-options.js';
import { usingWarehouse, type Warehouse } from './warehouse.js';

export interface LockedRunOptions {
  /** Queue behind a run that holds the warehouse lock instead of failing with LockError (--wait). */
  wait?: boolean;
  /** Appended to the message when the lock is busy (default: rerun with --wait). */
  busyHint?: string;
  /** Shutdown: ends a wait, and the run takes no new windows. */
  signal?: AbortSignal;
  /** Called once the lock is held: from then on, a run left 'running' in the log is ours. */
  onLocked?: (db: Kysely<Database>) => void;
  /** Called right before the lock is released. */
  onReleasing?: () => void;
  onPlan?: (totalWindows: number, runId: number) => void;
  onWindow?: (outcome: WindowOutcome, done: number, total: number) => void;
}

/**
 * One run under the warehouse lock, the way every command runs one (sync, backfill, schedule,
 * demo): the lock first, before any API client exists, so a second run makes no request at all;
 * then the log is cleaned of runs a killed process left 'running'; then the run; then the lock
 * is released (it also dies with the process).
 */
export async function runLocked(
  warehouse: Warehouse,
  { config, logger }: CommandContext,
  request: SyncRequest,
  options: LockedRunOptions = {},
): Promise<RunResult> {
  const lock = await acquireRunLock({
    url: warehouse.url,
    schema: config.schema,
    wait: options.wait ?? false,
    ...(options.signal === undefined ? {} : { signal: options.signal }),
    ...(options.busyHint === undefined ? {} : { busyHint: options.busyHint }),
    onWait: (holder) => logger.warn(`${describeHolder(config.schema, holder)}; waiting for it (--wait)`),
  });
  try {
    options.onLocked?.(warehouse.db);
    const abandoned = await interruptRunningRuns(
      warehouse.db,
      'the process running it ended without recording the end (killed, or its machine stopped)',
    );
    if (abandoned.length > 0)
      logger.warn({ runIds: abandoned }, 'runs left running by a process that ended are marked interrupted');
    const signals = [options.signal, lock.lost].filter((s): s is AbortSignal => s !== undefined);
    return await runSync(
      {
        pool: warehouse.pool,
        db: warehouse.db,
        logger,
        now: () => new Date(),
        sources: config.sources,
        settings: config,
        signal: AbortSignal.any(signals),
        ...(options.onPlan === undefined ? {} : { onPlan: options.onPlan }),
        ...(options.onWindow === undefined ? {} : { onWindow: options.onWindow }),
      },
      request,
    );
  } finally {
    options.onReleasing?.();
    await lock.release();
  }
}

/**
 * What a forced exit (grace period over, second signal) records: the run in progress becomes
 * interrupted, with the counts of the windows committed so far. Only while the lock is held: the
 * 'running' row is then ours, and not another process's.
 */
export function forcedExitRecorder() {
  let lockedDb: Kysely<Database> | undefined;
  let finished: WindowOutcome[] = [];
  return {
    hooks: {
      onLocked: (db: Kysely<Database>) => {
        lockedDb = db;
        finished = [];
      },
      onReleasing: () => {
        lockedDb = undefined;
      },
      onWindow: (outcome: WindowOutcome) => {
        finished.push(outcome);
      },
    },
    async onForce(reason: string): Promise<void> {
      if (lockedDb === undefined) return;
      await interruptRunningRuns(
        lockedDb,
        `${reason}: windows in flight were rolled back`,
        summarize(finished, []),
      );
    },
  };
}

/**
 * Shared by `sync` and `backfill`: open the warehouse, run under the lock, print, decide the exit
 * code. SIGTERM/SIGINT stop it cleanly within the grace period (src/cli/run-options.ts).
 */
export async function executeRun(
  context: CommandContext,
  request: SyncRequest,
  options: { wait?: boolean } = {},
): Promise<void> {
  const { config, logger } = context;
  const recorder = forcedExitRecorder();
  const shutdown = shutdownSignal({ logger, graceMs: config.shutdownGraceMs, onForce: recorder.onForce });
  const progress = progressFor(request, logger);
  try {
    const result = await usingWarehouse(config, logger, (warehouse) =>
      runLocked(warehouse, context, request, {
        wait: options.wait ?? false,
        signal: shutdown.signal,
        ...recorder.hooks,
        onPlan: (total, runId) => progress?.onPlan(total, runId),
        onWindow: (outcome, done, total) => {
          recorder.hooks.onWindow(outcome);
          progress?.onWindow(outcome, done, total);
        },
      }),
    );
    progress?.stop();
    printRun(result);
  } finally {
    progress?.stop();
    shutdown.dispose();
  }
}

/** A backfill shows its progress: a bar on a terminal, a log line now and then elsewhere. */
function progressFor(request: SyncRequest, logger: Logger): RunProgress | undefined {
  if (request.range === undefined) return undefined;
  return createProgress({
    days: planBackfillDays(request.range.from, request.range.to, todayUtc(new Date())),
    logger,
    tty: Boolean(process.stderr.isTTY) && !process.env.CI,
  });
}
