import type { VerifyProgress } from '../ledger/read.js';
import { VERIFY_PERIOD_DAYS } from '../ledger/read-period.js';

/** One line per source: `main: 2,190 settled windows, 12 never verified (oldest 2024-03-01); ...`. */
export function describeVerifyProgress(p: VerifyProgress): string {
  const never =
    p.neverVerified === 0
      ? 'every one verified'
      : `${p.neverVerified} never verified (oldest day ${p.oldestUnverifiedDay})`;
  const found = `lacked ${p.lacked}, changed ${p.changed}, gone ${p.gone}, moved ${p.moved}`;
  const short =
    p.short.length === 0 ? '' : `; found short: ${p.short.map((s) => `${s.resource}/${s.day}`).join(', ')}`;
  return `${p.settled} settled windows, ${never}; ${p.verifiedSince} verified in the last ${VERIFY_PERIOD_DAYS} days (${found})${short}`;
}
