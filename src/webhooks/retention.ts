import type pg from 'pg';
import { errorMessage } from '../errors.js';
import type { Logger } from '../log/logger.js';

/**
 * Rows cleared per statement. Each batch is one short autocommitted UPDATE that skips rows a
 * delivery holds, so the clearing never makes a sender wait; 500 rows of a few KiB are a few
 * milliseconds.
 */
const BATCH_SIZE = 500;
/** `serve` clears at start and then hourly: a body outlives its retention by an hour at most. */
const RETENTION_INTERVAL_MS = 60 * 60 * 1000;

/**
 * Clears the bodies of webhook_events first received more than `days` days before `now`
 * (INSIGHTS_WEBHOOK_RETENTION_DAYS). The row stays, with its body_hash and status: a redelivery
 * of a cleared body is still recognised as the stored one (a duplicate, answered as before, not
 * applied again). `webhooks replay` skips cleared rows: there is nothing left to re-apply.
 * Returns how many bodies were cleared.
 */
export async function clearOldBodies(pool: pg.Pool, days: number, now = new Date()): Promise<number> {
  const cutoff = new Date(now.getTime() - days * 86_400_000);
  let cleared = 0;
  for (;;) {
    const result = await pool.query(
      `with old as (
         select id from webhook_events
          where body_cleared_at is null and received_at < $1
          order by received_at
          limit $2
          for update skip locked)
       update webhook_events e
          set body = null, body_text = null, body_cleared_at = now()
         from old where e.id = old.id`,
      [cutoff, BATCH_SIZE],
    );
    cleared += result.rowCount ?? 0;
    if ((result.rowCount ?? 0) < BATCH_SIZE) return cleared;
  }
}

export interface RetentionTimer {
  /** Stops the timer and waits for a clearing in flight. */
  stop(): Promise<void>;
}

/** Clears at once and then every `intervalMs`; one info line with the count each time. */
export function startRetention(
  pool: pg.Pool,
  logger: Logger,
  days: number,
  intervalMs = RETENTION_INTERVAL_MS,
): RetentionTimer {
  let running: Promise<void> = Promise.resolve();
  const run = () => {
    running = running.then(async () => {
      try {
        const cleared = await clearOldBodies(pool, days);
        logger.info({ cleared, retentionDays: days }, 'old webhook bodies cleared');
      } catch (error) {
        // The next turn tries again; the receiver goes on meanwhile.
        logger.warn({ err: errorMessage(error) }, 'old webhook bodies not cleared');
      }
    });
  };
  run();
  const timer = setInterval(run, intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
