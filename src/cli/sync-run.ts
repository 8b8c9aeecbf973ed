import { planBackfillDays } from '../ledger/plan.js';
import type { Logger } from '../log/logger.js';
import { forcedExitRecorder, runLocked } from '../sync/run-locked.js';
import type { SyncRequest } from '../sync/run-sync.js';
import { shutdownSignal } from '../sync/shutdown.js';
import { todayUtc } from '../time/days.js';
import type { CommandContext } from './command-context.js';
import { printRun } from './print-run.js';
import { createProgress, type RunProgress } from './progress.js';
import { usingWarehouse } from './warehouse.js';

/**
 * `sync` and `backfill`: open the warehouse, run under the lock (src/sync/run-locked.ts), show
 * progress, print the summary, decide the exit code. SIGTERM/SIGINT stop it cleanly within the
 * grace period (src/sync/shutdown.ts).
 */
export async function executeRun(
  context: CommandContext,
  request: SyncRequest,
  options: { wait?: boolean; queue?: boolean } = {},
): Promise<void> {
  const { config, logger } = context;
  const recorder = forcedExitRecorder();
  const shutdown = shutdownSignal({ logger, graceMs: config.shutdownGraceMs, onForce: recorder.onForce });
  const progress = progressFor(request, logger);
  try {
    const result = await usingWarehouse(
      config,
      logger,
      (warehouse) =>
        runLocked(warehouse, context, request, {
          wait: options.wait ?? false,
          queue: options.queue ?? false,
          // The table printed at the end is on the same screen as the log.
          summaryShown: Boolean(process.stdout.isTTY && process.stderr.isTTY),
          signal: shutdown.signal,
          ...recorder.hooks,
          onPlan: (total, runId) => {
            recorder.hooks.onPlan(total, runId);
            progress?.onPlan(total, runId);
          },
          onWindow: (outcome, done, total) => {
            recorder.hooks.onWindow(outcome);
            progress?.onWindow(outcome, done, total);
          },
        }),
      { access: 'write' },
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
