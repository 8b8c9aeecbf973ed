import type { Kysely } from 'kysely';
import type { Database } from '../db/database.js';
import { type VerifyProgress, verifyProgress } from '../ledger/read.js';
import { VERIFY_PERIOD_DAYS } from '../ledger/read-period.js';

/**
 * What `status` shows of the verifies (the `verify` command and the schedule's scrub), per source
 * that has had one: how far the scrub has got, what the last VERIFY_PERIOD_DAYS days found, and
 * the days it found short. Sources never verified are left out (nothing to say but "never").
 */
export function verifyStatus(db: Kysely<Database>, now: Date): Promise<VerifyProgress[]> {
  return verifyProgress(db, new Date(now.getTime() - VERIFY_PERIOD_DAYS * 86_400_000));
}
