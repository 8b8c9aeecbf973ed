import { Gauge, type Registry } from 'prom-client';
import type { VerifyProgress } from '../ledger/read.js';
import { dayStartMs } from '../time/days.js';

/**
 * The verifies' progress and findings (the `verify` command and the schedule's scrub), per
 * source, as the ledger holds them (verifyProgress): published with each run's metrics, and
 * again after a verify records what it found. Gauges, not counters: each is the ledger's state
 * at the time of writing, read afresh, so a process that restarts reports the same numbers.
 * A time that does not exist yet (no day verified, every day verified) is 0, as
 * insights_sync_last_success_timestamp_seconds is, so that an alert can test for it.
 */
export interface VerifyGauges {
  settled: Gauge<'source'>;
  unverified: Gauge<'source'>;
  oldestUnverifiedDay: Gauge<'source'>;
  leastRecentlyVerified: Gauge<'source'>;
  lastVerified: Gauge<'source'>;
  recentWindows: Gauge<'source'>;
  recentItems: Gauge<'source' | 'outcome'>;
}

/** What a verify finds of an item: the outcome label of insights_sync_verify_recent_items. */
export const VERIFY_OUTCOMES = ['lacked', 'changed', 'gone', 'moved'] as const;

export function createVerifyGauges(registry: Registry, periodDays: number): VerifyGauges {
  const registers = [registry];
  const source = (name: string, help: string) => new Gauge({ name, help, labelNames: ['source'], registers });
  return {
    settled: source(
      'insights_sync_verify_settled_windows',
      'Settled (done) day windows in the ledger, per source.',
    ),
    unverified: source(
      'insights_sync_verify_unverified_windows',
      'Settled day windows no verify (the verify command or the schedule scrub) has read again yet, per source.',
    ),
    oldestUnverifiedDay: source(
      'insights_sync_verify_oldest_unverified_day_timestamp_seconds',
      'Start (UTC midnight, Unix time) of the oldest settled day never verified, per source; 0 when every one has been.',
    ),
    leastRecentlyVerified: source(
      'insights_sync_verify_least_recent_timestamp_seconds',
      'Oldest last verify of a settled day once verified (Unix time), per source: how far behind the scrub is; 0 when none has been.',
    ),
    lastVerified: source(
      'insights_sync_verify_last_timestamp_seconds',
      'When a day of the source was last verified (Unix time); 0 when none has been.',
    ),
    recentWindows: source(
      'insights_sync_verify_recent_windows',
      `Day windows verified in the last ${periodDays} days, per source.`,
    ),
    recentItems: new Gauge({
      name: 'insights_sync_verify_recent_items',
      help: `Items the last verify of each day window verified in the last ${periodDays} days found, per source: lacked (stored now), changed (rewritten), gone (marked missing upstream), moved (dt moved to another day).`,
      labelNames: ['source', 'outcome'],
      registers,
    }),
  };
}

const seconds = (at: Date | null) => (at === null ? 0 : at.getTime() / 1000);

export function setVerifyGauges(gauges: VerifyGauges, progress: readonly VerifyProgress[]): void {
  for (const gauge of Object.values(gauges)) gauge.reset();
  for (const p of progress) {
    const source = { source: p.source };
    gauges.settled.set(source, p.settled);
    gauges.unverified.set(source, p.neverVerified);
    gauges.oldestUnverifiedDay.set(
      source,
      p.oldestUnverifiedDay === null ? 0 : dayStartMs(p.oldestUnverifiedDay) / 1000,
    );
    gauges.leastRecentlyVerified.set(source, seconds(p.leastRecentlyVerifiedAt));
    gauges.lastVerified.set(source, seconds(p.lastVerifiedAt));
    gauges.recentWindows.set(source, p.verifiedSince);
    for (const outcome of VERIFY_OUTCOMES) gauges.recentItems.set({ source: p.source, outcome }, p[outcome]);
  }
}
