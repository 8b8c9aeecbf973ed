import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contiguousWatermark } from '../../src/ledger/contiguous.js';
import { planSyncDays } from '../../src/ledger/plan.js';
import { type DayString, daysFrom } from '../../src/time/days.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { checkWatermarkProperty } from './watermark-property.js';

/**
 * Guarantee 2: the watermark always equals the end of the contiguous done prefix, and the next
 * plan requests exactly the days not done plus the lookback.
 *
 * 1. A model of a run, 1,000 times: the planner's days go through k workers (1-8) and complete in
 *    a random order, some failing; after every completion the watermark (contiguousWatermark, as
 *    advanceWatermark computes it) is compared with a scan of the done set; then the next plan.
 * 2. The same on the real orchestrator and PostgreSQL (watermark-property.ts), fewer times here
 *    and more in `npm run test:reliability`.
 */

const CALENDAR: DayString[] = Array.from({ length: 70 }, (_, i) =>
  new Date(Date.UTC(2026, 0, 1 + i)).toISOString().slice(0, 10),
);
const at = (i: number): DayString => CALENDAR[i] as DayString;

/** Reference: the last day of the done run starting at `start`, by scanning the calendar. */
function prefixEnd(start: number, done: ReadonlySet<DayString>, today: number): DayString | null {
  let end: DayString | null = null;
  for (let i = start; i < today && done.has(at(i)); i++) end = at(i);
  return end;
}

const model = fc.record({
  days: fc.integer({ min: 1, max: 60 }),
  startOffset: fc.integer({ min: 0, max: 5 }),
  concurrency: fc.integer({ min: 1, max: 8 }),
  failing: fc.uniqueArray(fc.integer({ min: 0, max: 65 }), { maxLength: 10 }),
  /** Which window in flight completes next, as fractions of the number in flight. */
  picks: fc.array(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), {
    minLength: 1,
    maxLength: 80,
  }),
  lookbackDays: fc.integer({ min: 0, max: 6 }),
});

describe('the watermark under concurrency, failures and any completion order', () => {
  it('model, 1,000 runs: after every completion the watermark is the end of the done prefix; the next plan is exactly what is missing plus the lookback', () => {
    fc.assert(
      fc.property(model, (s) => {
        const start = s.startOffset;
        const todayIndex = start + s.days;
        const today = at(todayIndex);
        const failing = new Set(s.failing.map(at));
        const queue = planSyncDays({
          today,
          watermark: null,
          startDay: at(start),
          doneDays: new Set(),
          lookbackDays: s.lookbackDays,
        });
        expect(queue).toEqual(daysFrom(at(start), today));
        const done = new Set<DayString>();
        const inFlight: DayString[] = [];
        let watermark: DayString | null = null;
        let step = 0;
        while (queue.length > 0 || inFlight.length > 0) {
          while (inFlight.length < s.concurrency && queue.length > 0)
            inFlight.push(queue.shift() as DayString);
          const pick = s.picks[step++ % s.picks.length] ?? 0;
          const [day] = inFlight.splice(Math.floor(pick * inFlight.length), 1) as [DayString];
          if (failing.has(day) || day === today) continue; // failed, or open (today)
          done.add(day);
          const next = contiguousWatermark(watermark, at(start), (d) => done.has(d), today);
          if (watermark !== null) expect(next !== null && next >= watermark).toBe(true);
          watermark = next;
          expect(watermark).toBe(prefixEnd(start, done, todayIndex));
        }
        // The next plan, from what the ledger would hold: done days after the watermark.
        const plan = planSyncDays({
          today,
          watermark,
          startDay: at(start),
          doneDays: new Set([...done].filter((d) => watermark === null || d > watermark)),
          lookbackDays: s.lookbackDays,
        });
        const expected = new Set<DayString>([today]);
        for (let i = start; i < todayIndex; i++) if (!done.has(at(i))) expected.add(at(i));
        for (let k = 1; k <= s.lookbackDays && todayIndex - k >= start; k++) expected.add(at(todayIndex - k));
        expect(plan).toEqual([...expected].sort());
      }),
      { numRuns: 1000 },
    );
  });

  describe('on the real orchestrator and database', () => {
    let t: TestDatabase;
    beforeAll(async () => {
      t = await createTestDatabase();
    });
    afterAll(() => t.drop());

    it('25 random runs: the invariant at every request, the next plan, and the catch-up', async () => {
      await checkWatermarkProperty(t, 25);
    }, 120_000);
  });
});
