import type { Config } from '../src/config/config.js';
import type { SyncRequest } from '../src/sync/run-sync.js';

/** What the scheduler runs, and when. */
export interface JobDefinition {
  name: string;
  /** Cron expression (node-cron syntax: 5 fields, or 6 with seconds first). */
  cron: string;
  /** IANA timezone the expression is read in; daylight-saving rules: src/time/cron-schedule.ts. */
  timezone: string;
  /** The run: the same as `insights-sync sync`, recorded with trigger 'schedule'. */
  request: SyncRequest;
}

/**
 * The nightly sync: every configured source and resource, brought up to date from the
 * watermarks (with the lookback days), at INSIGHTS_SCHEDULE (default 03:00) in INSIGHTS_TIMEZONE
 * (default UTC). 03:00 UTC leaves the service three hours to settle the day before.
 */
export function nightlySync(config: Pick<Config, 'schedule' | 'timezone'>): JobDefinition {
  return {
    name: 'nightly-sync',
    cron: config.schedule,
    timezone: config.timezone,
    request: { trigger: 'schedule' },
  };
}
