import { describe, expect, it } from 'vitest';
import type { ServedReading } from '../helpers/sim-readings.js';
import { SIZES } from './midrun-search.js';
import { emptyReadingTally, playCase } from './reading-search.js';

/**
 * SPEC-GAPS: "one server over time may pick differently". A server restarted between runs with a
 * cap of 30 (it was 1000), an exclusive end bound, its day 5 h behind UTC, and its answers listed
 * oldest first where they came at random (from a listing sorted the other way round, the run
 * would know the server changed: server-reading.ts, listingChanged). The
 * backfill's first day asks its own request under the stored reading (inclusive end: a day asked
 * alone), which the new bound answers empty, and the run's check of the stored reading asks the
 * widest request: 30 items, below our limit and any cap the run knows, all of the oldest day, so
 * the check finds nothing of the day against its empty answer and the day settles empty on the
 * check's word. The next days prove the cap of 30: the check's answer was cut and proved nothing.
 * The day is read again (the session keeps the check's answer beside the day), not left empty.
 */

const BEFORE: ServedReading = {
  startdate: 'inclusive',
  enddate: 'inclusive',
  order: 'random',
  cap: 1000,
  maxLimit: 300,
  dayOffsetMinutes: 0,
};
const AFTER: ServedReading = {
  startdate: 'inclusive',
  enddate: 'exclusive',
  order: 'oldest-first',
  cap: 30,
  maxLimit: 300,
  dayOffsetMinutes: -300,
};

describe('a day settled on the word of a reading check whose answer a cap proved later cut', () => {
  it('is read again once the cap is proved: no day of the backfill or the nightly sync settled short', () => {
    const tally = emptyReadingTally();
    const asked: string[] = [];
    playCase(20261205 + 443, BEFORE, AFTER, tally, SIZES.normal, (line) => asked.push(line));
    expect(tally.short).toEqual([]);
    // The day the check vouched for, read again in the run's reopen pass.
    expect(asked).toContain('backfill: reopened 2026-10-31');
    expect(tally.reopened).toBeGreaterThan(0);
  });
});
