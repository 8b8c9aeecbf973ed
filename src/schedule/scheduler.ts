import { errorMessage } from '../errors.js';
import type { Logger } from '../log/logger.js';
import type { CronSchedule } from '../time/cron-schedule.js';
import type { Clock } from './clock.js';

/** One firing of the schedule: the slot it was due at, or the start of the process (--run-now). */
export interface Tick {
  slot: Date;
  reason: 'schedule' | 'start';
}

export interface SchedulerOptions {
  schedule: CronSchedule;
  clock: Clock;
  logger: Logger;
  /** One run of the job. Never called while the previous call is still in flight. */
  run: (tick: Tick) => Promise<void>;
  /** Also run once right away, e.g. when a container starts. */
  runNow?: boolean;
}

export interface Scheduler {
  /** The next slot, or null once stopped. */
  nextRun(): Date | null;
  /** Takes no new ticks; resolves once the run in flight, if any, has ended. */
  stop(): Promise<void>;
}

/**
 * The timer is re-armed at least hourly, and the clock read again each time: a long setTimeout
 * overflows past 24.8 days and does not follow a suspended machine or a corrected wall clock.
 */
const MAX_TIMER_MS = 3_600_000;

/**
 * Fires `run` at every slot of `schedule`, one run at a time: a slot that comes while a run is in
 * flight is skipped and logged, not queued. Slots passed while the process could not run (a
 * suspended machine) are coalesced into one run, so a night is never run twice.
 */
export function startScheduler(options: SchedulerOptions): Scheduler {
  const { schedule, clock, logger } = options;
  let next: Date | null = schedule.nextAfter(clock.now());
  let cancelTimer: (() => void) | undefined;
  let current: { promise: Promise<void>; since: Date } | undefined;

  const arm = () => {
    if (next === null) return;
    const wait = next.getTime() - clock.now().getTime();
    cancelTimer = clock.setTimer(onTimer, Math.min(Math.max(wait, 0), MAX_TIMER_MS));
  };

  const onTimer = () => {
    cancelTimer = undefined;
    const slot = next;
    if (slot === null) return;
    const now = clock.now();
    if (now < slot) {
      arm();
      return;
    }
    next = schedule.nextAfter(now);
    const missed = countSlots(schedule, slot, now);
    if (missed > 0)
      logger.warn(
        { slot: slot.toISOString(), missed },
        'the process could not run at some slots: one run for them all',
      );
    arm();
    fire({ slot, reason: 'schedule' });
  };

  const fire = (tick: Tick) => {
    const slot = tick.slot.toISOString();
    if (current !== undefined) {
      logger.warn(
        { slot, runningSince: current.since.toISOString() },
        'tick skipped: the previous run is still in progress',
      );
      return;
    }
    logger.info({ slot, reason: tick.reason, nextRun: next?.toISOString() }, 'scheduled run starting');
    // Deferred by a microtask, so even a run that throws at once is caught and logged.
    const promise = Promise.resolve()
      .then(() => options.run(tick))
      .catch((error: unknown) => logger.error({ slot, err: errorMessage(error) }, 'scheduled run failed'))
      .finally(() => {
        current = undefined;
        logger.info({ nextRun: next?.toISOString() ?? null }, 'waiting for the next slot');
      });
    current = { promise, since: clock.now() };
  };

  logger.info(
    { expression: schedule.expression, timezone: schedule.timezone, nextRun: next.toISOString() },
    'scheduler started',
  );
  if (options.runNow) fire({ slot: clock.now(), reason: 'start' });
  arm();

  return {
    nextRun: () => next,
    async stop() {
      next = null;
      cancelTimer?.();
      cancelTimer = undefined;
      await current?.promise;
    },
  };
}

/** Slots strictly between `slot` and `now` (the ones coalesced into the run at `slot`). */
function countSlots(schedule: CronSchedule, slot: Date, now: Date): number {
  let count = 0;
  for (let at = schedule.nextAfter(slot); at <= now && count < 1000; at = schedule.nextAfter(at)) count++;
  return count;
}
