import { describe, expect, it } from 'vitest';
import type { ServedReading } from '../helpers/sim-readings.js';
import { SIZES } from './midrun-search.js';
import { emptyReadingTally, playCase } from './reading-search.js';

/**
 * SPEC-GAPS: "one server over time may pick differently". A server capped at 30, its day 5 h
 * behind UTC, restarted between runs with its startdate exclusive (its requests now start a whole
 * day later) and its answers listed oldest first where they were newest first. The start's move
 * inward is one no item can show, and every answer still agreed with the stored bounds: a quiet
 * day whose first items came after 05:00 settled whole without them (2026-11-19: 15 of 23 items).
 * But a sorted listing turns round only with the code that sorts: the first long answer listed
 * the other way round says the server changed, and the run learns its reading again
 * (server-reading.ts, listingChanged). Case 483 of changedPairs(500, 48) on sources of 20 to 100
 * items a day.
 */

const BEFORE: ServedReading = {
  startdate: 'inclusive',
  enddate: 'exclusive',
  order: 'newest-first',
  cap: 30,
  maxLimit: 40,
  dayOffsetMinutes: -300,
};
const AFTER: ServedReading = {
  startdate: 'exclusive',
  enddate: 'exclusive',
  order: 'oldest-first',
  cap: 30,
  maxLimit: null,
  dayOffsetMinutes: -300,
};

describe('a server whose listing turned round between runs, as its startdate turned exclusive', () => {
  it('the backfill and the nightly settle no day short', () => {
    const tally = emptyReadingTally();
    playCase(48 + 483, BEFORE, AFTER, tally, SIZES.normal);
    expect(tally.short).toEqual([]);
    expect(tally.flagged).toBeGreaterThan(0);
  });
});
