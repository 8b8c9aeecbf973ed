import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type DayRange, emptyReading, halves, learnFromResponse } from '../../src/extract/server-reading.js';
import { addDays, type DayString } from '../../src/time/days.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const midnight = (day: DayString) => Date.parse(`${day}T00:00:00.000Z`);

/** A server's reading: [a + s + o, b + e + o) for a request (a, b), as server-reading.ts says. */
interface TrueReading {
  s: number;
  e: number;
  o: number;
}

function servedSpan(range: DayRange, truth: TrueReading): { startMs: number; endMs: number } {
  return {
    startMs: midnight(range.startdate) + truth.s + truth.o,
    endMs: midnight(range.enddate) + truth.e + truth.o,
  };
}

/** An answer to `range`: items every `step` ms across what the server serves for it. */
function answer(range: DayRange, truth: TrueReading, step: number): { dt: string }[] {
  const span = servedSpan(range, truth);
  const items: { dt: string }[] = [];
  for (let time = span.startMs; time < span.endMs; time += step)
    items.push({ dt: new Date(time).toISOString() });
  return items;
}

describe('halves: two narrower requests that hold what the whole holds', () => {
  it('splits a UTC day on a server 11 hours behind, both bounds inclusive, into its two server days', () => {
    // The start bound alone is not proved inclusive: an item 11 h past startdate's midnight fits an
    // exclusive bound on a server 13 h ahead too. The items 11 h past enddate's end prove it.
    const truth = { s: 0, e: DAY, o: 11 * HOUR };
    const reading = emptyReading();
    const asked = { startdate: '2026-03-09' as DayString, enddate: '2026-03-10' as DayString };
    learnFromResponse(reading, asked, answer(asked, truth, 7 * 60_000));
    expect(halves(asked, reading)).toEqual([
      { startdate: '2026-03-09', enddate: '2026-03-09' },
      { startdate: '2026-03-10', enddate: '2026-03-10' },
    ]);
  });

  it('under every reading, whatever an answer taught, the halves hold every instant the whole does', () => {
    const quarter = HOUR / 4;
    fc.assert(
      fc.property(
        fc.constantFrom(0, DAY),
        fc.constantFrom(0, DAY),
        fc.integer({ min: -48, max: 56 }),
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 5, max: 600 }),
        (s, e, quarters, learnWidth, width, stepMinutes) => {
          const truth = { s, e, o: -quarters * quarter };
          const reading = emptyReading();
          const learned = {
            startdate: '2026-03-01' as DayString,
            enddate: addDays('2026-03-01', learnWidth),
          };
          learnFromResponse(reading, learned, answer(learned, truth, stepMinutes * 60_000));
          const range = { startdate: '2026-03-10' as DayString, enddate: addDays('2026-03-10', width) };
          const parts = halves(range, reading);
          if (parts === undefined) return;
          const whole = servedSpan(range, truth);
          const [first, second] = parts.map((part) => servedSpan(part, truth)) as [
            ReturnType<typeof servedSpan>,
            ReturnType<typeof servedSpan>,
          ];
          expect(first.startMs).toBeLessThanOrEqual(whole.startMs);
          expect(second.endMs).toBeGreaterThanOrEqual(whole.endMs);
          expect(second.startMs).toBeLessThanOrEqual(first.endMs);
        },
      ),
      { numRuns: 2000 },
    );
  });
});
