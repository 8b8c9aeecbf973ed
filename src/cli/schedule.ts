import type { Command } from 'commander';
import { nightlySync } from '../../jobs/nightly-sync.js';
import { LockError } from '../errors.js';
import { systemClock } from '../schedule/clock.js';
import { cronSchedule } from '../schedule/cron-schedule.js';
import { startScheduler } from '../schedule/scheduler.js';
import { forcedExitRecorder, runLocked } from '../sync/run-locked.js';
import { shutdownSignal } from '../sync/shutdown.js';
import { type CommandContext, commandContext } from './command-context.js';
import { usingWarehouse } from './warehouse.js';

export function registerSchedule(program: Command): void {
  program
    .command('schedule')
    .description(
      'Run the nightly sync until stopped: at INSIGHTS_SCHEDULE (cron, default "0 3 * * *") in INSIGHTS_TIMEZONE (default UTC). One run at a time: a slot that comes during a run, or while another process holds the warehouse lock, is skipped and logged. SIGTERM/SIGINT stop it within INSIGHTS_SHUTDOWN_GRACE_MS.',
    )
    .option('--run-now', 'also run once at start, e.g. when a container starts')
    .action(async (options: { runNow?: boolean }) => {
      await runSchedule(commandContext({ requireSources: true }), { runNow: options.runNow === true });
    });
}

/** Opens the warehouse for the life of the process and runs the nightly job at each slot. */
export async function runSchedule(context: CommandContext, options: { runNow: boolean }): Promise<void> {
  const { config, logger } = context;
  const job = nightlySync(config);
  const schedule = cronSchedule(job.cron, job.timezone);
  const jobLogger = logger.child({ job: job.name });
  const recorder = forcedExitRecorder();
  const shutdown = shutdownSignal({ logger, graceMs: config.shutdownGraceMs, onForce: recorder.onForce });
  try {
    await usingWarehouse(config, logger, async (warehouse) => {
      const scheduler = startScheduler({
        schedule,
        clock: systemClock,
        logger: jobLogger,
        runNow: options.runNow,
        run: async (tick) => {
          try {
            const result = await runLocked(warehouse, { config, logger: jobLogger }, job.request, {
              signal: shutdown.signal,
              busyHint: '; this slot is skipped',
              ...recorder.hooks,
            });
            if (result.status !== 'ok')
              jobLogger.warn(
                { runId: result.runId, status: result.status, error: result.error },
                'scheduled run did not end ok; `insights-sync status` shows why',
              );
          } catch (error) {
            if (!(error instanceof LockError)) throw error;
            jobLogger.warn({ slot: tick.slot.toISOString() }, error.message);
          }
        },
      });
      process.stdout.write(
        `${job.name}: "${job.cron}" in ${job.timezone}; next run ${scheduler.nextRun()?.toISOString()}. Stop with Ctrl+C or SIGTERM.\n`,
      );
      await new Promise<void>((resolve) => {
        if (shutdown.signal.aborted) resolve();
        shutdown.signal.addEventListener('abort', () => resolve(), { once: true });
      });
      await scheduler.stop();
    });
    process.stdout.write(`${job.name}: stopped.\n`);
  } finally {
    shutdown.dispose();
  }
}
