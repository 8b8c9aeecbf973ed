import { describe, expect, it } from 'vitest';
import type { ServedReading } from '../helpers/sim-readings.js';
import { SIZES } from './midrun-search.js';
import { emptyReadingTally, playCase } from './reading-search.js';

/**
 * SPEC-GAPS: "one server over time may pick differently". A busy source (150 to 400 items a day)
 * learned inclusive at both ends, on UTC's day; the server restarted with both bounds exclusive,
 * its day 5:30 h east of UTC and a cap of 30. A day's request comes back cut at the cap, and its
 * two halves, which together hold everything it holds under any reading the evidence allows, come
 * back empty: with both bounds exclusive a one-day part holds nothing. The reading the run learns
 * from cut answers says too little of the bounds for either half alone to be short of the cut
 * answer, and the day was settled whole with the cut answer's 30 items (19 days of one case). An
 * uncut pair of halves lacking an item the whole served proves the reading stale: the day is
 * asked again under the reading learned afresh, and flagged where no request reads it whole.
 */

const BEFORE: ServedReading = {
  startdate: 'inclusive',
  enddate: 'inclusive',
  order: 'oldest-first',
  cap: 1000,
  maxLimit: 40,
  dayOffsetMinutes: 0,
};
const AFTER: ServedReading = {
  startdate: 'exclusive',
  enddate: 'exclusive',
  order: 'oldest-first',
  cap: 30,
  maxLimit: null,
  dayOffsetMinutes: 330,
};

describe('a cut day whose halves came back empty and uncut', () => {
  it('is never settled whole on the cut answer: every day of the backfill and the nightly sync is flagged', () => {
    const tally = emptyReadingTally();
    playCase(44 + 324, BEFORE, AFTER, tally, SIZES.busy);
    expect(tally.short).toEqual([]);
    // Each day holds more than the cap, and instants are refused: none can be read whole.
    expect(tally.flagged).toBe(tally.days);
    expect(tally.days).toBe(19);
  });
});
