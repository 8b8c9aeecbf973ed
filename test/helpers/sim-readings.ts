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
