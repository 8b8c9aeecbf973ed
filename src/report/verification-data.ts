import type { Kysely } from 'kysely';
import type { Database } from '../db/database.js';
import { verifyDifferences, verifyProgress } from '../ledger/read.js';
import { VERIFY_PERIOD_DAYS } from '../ledger/read-period.js';

/**
 * What the report shows of the verifies (the `verify` command and the schedule's scrub): per
 * source, how far they have got (the ledger read `status` shows too), and the days whose last
 * verify found the warehouse different from the service, by day and resource.
 */
export interface VerificationSource {
  source: string;
  /** Settled day windows, and those no verify has read again. */
  settled: number;
  neverVerified: number;
  oldestUnverifiedDay: string | null;
  /** When a day of the source was last verified, and the oldest last verify of a verified day (ISO); null: never. */
  lastVerifiedAt: string | null;
  leastRecentlyVerifiedAt: string | null;
  /** Windows verified in the last `periodDays`, and what their last verify found. */
  verifiedSince: number;
  lacked: number;
  changed: number;
  gone: number;
  moved: number;
}

export interface VerificationDay {
  source: string;
  resource: string;
  day: string;
  verifiedAt: string;
  lacked: number;
  changed: number;
  gone: number;
  moved: number;
}

export interface Verification {
  periodDays: number;
  sources: VerificationSource[];
  /** The most recently verified first, at most DIFFERENCES_SHOWN. */
  differences: VerificationDay[];
}

/** Days with differences listed: a scrub that finds more than this is read in day_completeness. */
export const DIFFERENCES_SHOWN = 200;

export async function loadVerification(
  db: Kysely<Database>,
  /** The report's source; undefined: all of them. */
  source: string | undefined,
  now: Date,
): Promise<Verification> {
  const since = new Date(now.getTime() - VERIFY_PERIOD_DAYS * 86_400_000);
  const progress = (await verifyProgress(db, since, { everySource: true })).filter(
    (p) => source === undefined || p.source === source,
  );
  const differences = await verifyDifferences(db, {
    limit: DIFFERENCES_SHOWN,
    ...(source === undefined ? {} : { source }),
  });
  return {
    periodDays: VERIFY_PERIOD_DAYS,
    sources: progress.map((p) => ({
      source: p.source,
      settled: p.settled,
      neverVerified: p.neverVerified,
      oldestUnverifiedDay: p.oldestUnverifiedDay,
      lastVerifiedAt: p.lastVerifiedAt?.toISOString() ?? null,
      leastRecentlyVerifiedAt: p.leastRecentlyVerifiedAt?.toISOString() ?? null,
      verifiedSince: p.verifiedSince,
      lacked: p.lacked,
      changed: p.changed,
      gone: p.gone,
      moved: p.moved,
    })),
    differences: differences.map((d) => ({ ...d, verifiedAt: d.verifiedAt.toISOString() })),
  };
}
