import { describe, expect, it } from 'vitest';
import type { ServedReading } from '../helpers/sim-readings.js';
import { SIZES } from './midrun-search.js';
import { emptyReadingTally, playCase } from './reading-search.js';

/**
 * SPEC-GAPS: "one server over time may pick differently". A server learned inclusive at both ends
 * on UTC's day from answers all cut (cap 30, newest first), restarted between runs with its start
 * exclusive and its day 5:30 h east: the new start (18:30 the day before) lies inside the stored
 * one, which no answer had shown tight, so no item shows a move, and only quiet evenings show the
 * end's. A backfill is split between a writer that checks the stored reading and one that trusts
 * that check (a queued run's later worker). The checking writer's last proof finds the reading
 * stale and reopens the days it settled; the trusting writer's days were read under the same stale
 * reading. A queued run's planner judges every worker's days by such a verdict
 * (src/sync/queue-proof.ts, proveEndpoint), and the search now closes a run of two writers as it
 * does (reading-search.ts, judgedByPlanner). Closed writer by writer, the trusting writer's 2026-11-08
 * and 2026-11-14 stayed settled short: case 462 of changedPairs(500, 48).
 */
const BEFORE: ServedReading = {
  startdate: 'inclusive',
  enddate: 'inclusive',
  order: 'newest-first',
  cap: 30,
  maxLimit: 300,
  dayOffsetMinutes: 0,
};
const AFTER: ServedReading = {
  startdate: 'exclusive',
  enddate: 'inclusive',
  order: 'newest-first',
  cap: 30,
  maxLimit: null,
  dayOffsetMinutes: 330,
};

describe('a queued backfill closed after a stale verdict of one of its writers', () => {
  it('reads again the days the other writer settled under the stale reading: none settled short', () => {
    const tally = emptyReadingTally();
    playCase(48 + 462, BEFORE, AFTER, tally, SIZES.normal);
    expect(tally.short).toEqual([]);
    // The checker's own days and the trusting writer's two: 3 reopened when each was closed alone.
    expect(tally.reopened).toBe(5);
  });
});
