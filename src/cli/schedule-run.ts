import { DateTime } from 'luxon';
import { nightlySync } from '../../jobs/nightly-sync.js';
import { LockError } from '../errors.js';
import { printOut } from '../log/terminal-text.js';
import { systemClock } from '../schedule/clock.js';
import { startScheduler } from '../schedule/scheduler.js';
import { forcedExitRecorder, runLocked } from '../sync/run-locked.js';
import { runNight } from '../sync/scrub.js';
import { shutdownSignal } from '../sync/shutdown.js';
import { publishVerifyMetrics } from '../sync/verify.js';
import { cronSchedule } from '../time/cron-schedule.js';
import type { CommandContext } from './command-context.js';
import { startConfiguredMetrics } from './metrics-endpoint.js';
import { usingWarehouse } from './warehouse.js';

/**
 * `2026-03-29 03:00 Europe/Berlin (2026-03-29 01:00 UTC)`: the operator's clock and the logs'; in
 * UTC itself, once (`2026-03-29 03:00 UTC`).
 */
export function describeNextRun(next: Date | null | undefined, timezone: string): string {
  if (next === null || next === undefined) return 'none';
  const at = (zone: string) => DateTime.fromJSDate(next).setZone(zone).toFormat('yyyy-MM-dd HH:mm');
  const local = `${at(timezone)} ${timezone}`;
  return /^(Etc\/)?(UTC|UCT|GMT|Zulu|Universal)$/i.test(timezone) ? local : `${local} (${at('UTC')} UTC)`;
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
      const metrics = await startConfiguredMetrics(config);
      const scheduler = startScheduler({
        schedule,
        clock: systemClock,
        logger: jobLogger,
        runNow: options.runNow,
        run: async (tick) => {
          try {
            const runContext = { config, logger: jobLogger };
            const locked = { signal: shutdown.signal, busyHint: '; this slot is skipped', ...recorder.hooks };
            const night = await runNight({
              db: warehouse.db,
              sync: async () => {
                const result = await runLocked(warehouse, runContext, job.request, {
                  ...locked,
                  queue: config.scheduleQueue,
                });
                if (result.status !== 'ok')
                  jobLogger.warn(
                    { runId: result.runId, status: result.status, error: result.error },
                    'scheduled run did not end ok; `insights-sync status` shows why',
                  );
                return result;
              },
              // The scrub's verify runs in this process, queued or not: a night's slice is small.
              run: (request, onWindow) =>
                runLocked(warehouse, runContext, request, {
                  ...locked,
                  onWindow: (outcome) => {
                    recorder.hooks.onWindow(outcome);
                    onWindow(outcome);
                  },
                }),
              budget: config.scrubRequestsPerNight,
              signal: shutdown.signal,
              sources: config.sources.map((s) => s.name),
              lookbackDays: config.lookbackDays,
              now: () => new Date(),
              logger: jobLogger,
            });
            // The scrub recorded its findings after its runs published: the gauges again, with them.
            if (night.scrub !== undefined)
              await publishVerifyMetrics(warehouse.db, night.scrub, config, jobLogger);
          } catch (error) {
            if (!(error instanceof LockError)) throw error;
            jobLogger.warn({ slot: tick.slot.toISOString() }, error.message);
          }
        },
      });
      printOut(
        `${job.name}: "${job.cron}" in ${job.timezone}; next run ${describeNextRun(scheduler.nextRun(), job.timezone)}. Stop with Ctrl+C or SIGTERM.\n`,
      );
      await new Promise<void>((resolve) => {
        if (shutdown.signal.aborted) resolve();
        shutdown.signal.addEventListener('abort', () => resolve(), { once: true });
      });
      await scheduler.stop();
      await metrics?.close();
    });
    printOut(`${job.name}: stopped.\n`);
  } finally {
    shutdown.dispose();
  }
}
