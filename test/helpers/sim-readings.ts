import fc from 'fast-check';
import type { ServingSettings } from '../../src/simulator/settings.js';

/** One reading of the gaps the simulator plays (SPEC-GAPS: bounds, order, cap, maximum limit, server day). */
export type SimReading = Pick<
  ServingSettings,
  'startdate' | 'enddate' | 'order' | 'cap' | 'maxLimit' | 'dayOffsetMinutes'
>;

/** Readings a server may change between: a cap of 30 cuts a busy day, 40 and 300 are maximum limits. */
export const simReading: fc.Arbitrary<SimReading> = fc.record({
  startdate: fc.constantFrom('inclusive' as const, 'exclusive' as const),
  enddate: fc.constantFrom('inclusive' as const, 'exclusive' as const),
  order: fc.constantFrom('oldest-first' as const, 'newest-first' as const, 'random' as const),
  cap: fc.constantFrom(30, 1000),
  maxLimit: fc.constantFrom(null, 40, 300),
  dayOffsetMinutes: fc.constantFrom(0, -300, 330),
});

/** `count` seeded pairs of different readings: the one a first load learns, the one the server then plays. */
export function changedPairs(count: number, seed: number): [SimReading, SimReading][] {
  return fc.sample(
    fc.tuple(simReading, simReading).filter(([a, b]) => JSON.stringify(a) !== JSON.stringify(b)),
    { seed, numRuns: count },
  );
}

/** A reading with what the server does with instants in startdate and enddate (refused when absent). */
export type ServedReading = SimReading & Partial<Pick<ServingSettings, 'instants'>>;

/** A server that holds still: both bounds inclusive, newest first, a cap of 100, UTC days. */
export const STEADY_CAPPED: ServedReading = {
  startdate: 'inclusive',
  enddate: 'inclusive',
  order: 'newest-first',
  cap: 100,
  maxLimit: null,
  dayOffsetMinutes: 0,
};

const flip = (bound: 'inclusive' | 'exclusive') => (bound === 'inclusive' ? 'exclusive' : 'inclusive');

/**
 * A capped server that honours instants (so a day above its cap is read in time slices), and what
 * it changes to: its day moved (UTC to UTC+5, UTC-5 or UTC+5:30 and back), a bound's inclusivity
 * flipped, its order changed, instants ignored or refused, or several of these at once.
 */
export const cappedPair: fc.Arbitrary<[ServedReading, ServedReading]> = fc
  .tuple(
    fc.record({
      startdate: fc.constantFrom('inclusive' as const, 'exclusive' as const),
      enddate: fc.constantFrom('inclusive' as const, 'exclusive' as const),
      order: fc.constantFrom('oldest-first' as const, 'newest-first' as const, 'random' as const),
      cap: fc.constant(30),
      maxLimit: fc.constantFrom(null, 300),
      dayOffsetMinutes: fc.constantFrom(0, 0, 300, -300),
      instants: fc.constant('honoured' as const),
    }),
    fc.record(
      {
        dayOffsetMinutes: fc.constantFrom(0, 300, -300, 330),
        startdate: fc.constant(true),
        enddate: fc.constant(true),
        order: fc.constantFrom('oldest-first' as const, 'newest-first' as const, 'random' as const),
        instants: fc.constantFrom('ignored' as const, 'refused' as const),
      },
      { requiredKeys: [] },
    ),
  )
  .map(([before, change]): [ServedReading, ServedReading] => [
    before,
    {
      ...before,
      ...(change.dayOffsetMinutes !== undefined ? { dayOffsetMinutes: change.dayOffsetMinutes } : {}),
      ...(change.startdate ? { startdate: flip(before.startdate) } : {}),
      ...(change.enddate ? { enddate: flip(before.enddate) } : {}),
      ...(change.order !== undefined ? { order: change.order } : {}),
      ...(change.instants !== undefined ? { instants: change.instants } : {}),
    },
  ])
  .filter(([a, b]) => JSON.stringify(a) !== JSON.stringify(b));

/** `count` seeded pairs of cappedPair. */
export function cappedPairs(count: number, seed: number): [ServedReading, ServedReading][] {
  return fc.sample(cappedPair, { seed, numRuns: count });
}
