import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { contiguousWatermark } from '../../src/ledger/contiguous.js';
import { planBackfillDays, planSyncDays } from '../../src/ledger/plan.js';
import { type DayString, daysFrom } from '../../src/time/days.js';

const TODAY = '2026-03-10';
const START = '2026-03-01';

function plan(overrides: {
  watermark?: DayString | null;
  done?: DayString[];
  lookbackDays?: number;
  startDay?: DayString;
  today?: DayString;
}): DayString[] {
  return planSyncDays({
    today: overrides.today ?? TODAY,
    watermark: overrides.watermark ?? null,
    startDay: overrides.startDay ?? START,
    doneDays: new Set(overrides.done ?? []),
    lookbackDays: overrides.lookbackDays ?? 3,
  });
}

describe('planSyncDays', () => {
  it('starts at startDay and runs through today on the first run (no watermark)', () => {
    expect(plan({ watermark: null })).toEqual(daysFrom('2026-03-01', '2026-03-10'));
  });

  it('skips days already done on the first run, but not today', () => {
    expect(plan({ watermark: null, done: ['2026-03-02', '2026-03-05', TODAY] })).toEqual([
      '2026-03-01',
      '2026-03-03',
      '2026-03-04',
      '2026-03-06',
      '2026-03-07',
      '2026-03-08',
      '2026-03-09',
      '2026-03-10',
    ]);
  });

  it('re-fetches the lookback days before today, whatever the watermark', () => {
    const days = plan({
      watermark: '2026-03-06',
      lookbackDays: 3,
      done: ['2026-03-07', '2026-03-08', '2026-03-09'],
    });
    expect(days).toEqual(['2026-03-07', '2026-03-08', '2026-03-09', '2026-03-10']);
  });

  it('re-fetches the lookback days even when they are listed as done', () => {
    const days = plan({ watermark: '2026-03-09', lookbackDays: 2, done: ['2026-03-08', '2026-03-09'] });
    expect(days).toEqual(['2026-03-08', '2026-03-09', '2026-03-10']);
  });

  it('keeps reading the last days when an old day keeps failing and holds the watermark', () => {
    // 03-02 fails on every run: the watermark stays at 03-01, yet late items of 03-08..03-09 are read.
    const days = plan({
      watermark: '2026-03-01',
      lookbackDays: 2,
      done: daysFrom('2026-03-03', '2026-03-09'),
    });
    expect(days).toEqual(['2026-03-02', '2026-03-08', '2026-03-09', '2026-03-10']);
  });

  it('adds truncated days that can now be read further', () => {
    const days = planSyncDays({
      today: TODAY,
      watermark: '2026-03-09',
      startDay: START,
      doneDays: new Set(),
      lookbackDays: 0,
      readFurther: new Set(['2026-03-03', '2026-02-20']),
    });
    expect(days).toEqual(['2026-03-03', '2026-03-10']);
  });

  it('skips done days after the watermark and fetches the failed days and gaps between them', () => {
    const days = plan({
      watermark: '2026-03-04',
      lookbackDays: 0,
      done: ['2026-03-05', '2026-03-07', '2026-03-09'],
    });
    expect(days).toEqual(['2026-03-06', '2026-03-08', '2026-03-10']);
  });

  it('with lookback 0 fetches only what follows the watermark', () => {
    expect(plan({ watermark: '2026-03-08', lookbackDays: 0 })).toEqual(['2026-03-09', '2026-03-10']);
  });

  it('clips the lookback at startDay', () => {
    expect(
      plan({ watermark: '2026-03-02', lookbackDays: 30, done: daysFrom('2026-03-03', '2026-03-09') }),
    ).toEqual(daysFrom('2026-03-01', TODAY));
  });

  it('always fetches today, even when today is marked done', () => {
    expect(plan({ watermark: '2026-03-09', lookbackDays: 0, done: [TODAY] })).toEqual([TODAY]);
  });

  it('never plans a day after today, even when later days are not done', () => {
    const days = plan({ watermark: '2026-03-07', lookbackDays: 1, done: ['2026-03-12'] });
    expect(days).toEqual(['2026-03-08', '2026-03-09', '2026-03-10']);
  });

  it('plans nothing when the watermark is in the future (clock stepped back)', () => {
    expect(plan({ watermark: '2026-03-20', lookbackDays: 3 })).toEqual([]);
  });

  it('plans nothing when startDay is after today', () => {
    expect(plan({ watermark: null, startDay: '2026-03-11' })).toEqual([]);
  });
});

describe('planBackfillDays', () => {
  it('fetches the whole range, whatever is done', () => {
    expect(planBackfillDays('2026-02-27', '2026-03-02', TODAY)).toEqual([
      '2026-02-27',
      '2026-02-28',
      '2026-03-01',
      '2026-03-02',
    ]);
  });

  it('stops at today when the range reaches past it', () => {
    expect(planBackfillDays('2026-03-08', '2026-03-31', TODAY)).toEqual([
      '2026-03-08',
      '2026-03-09',
      '2026-03-10',
    ]);
  });

  it('plans nothing when the range starts after today or is reversed', () => {
    expect(planBackfillDays('2026-03-11', '2026-03-15', TODAY)).toEqual([]);
    expect(planBackfillDays('2026-03-05', '2026-03-04', TODAY)).toEqual([]);
  });
});

describe('contiguousWatermark', () => {
  const doneIn = (days: DayString[]) => (day: DayString) => days.includes(day);

  it('stays null when startDay is not done yet', () => {
    expect(contiguousWatermark(null, START, doneIn(['2026-03-02', '2026-03-03']), TODAY)).toBeNull();
  });

  it('starts counting at startDay when there is no watermark', () => {
    expect(contiguousWatermark(null, START, doneIn(['2026-03-01', '2026-03-02', '2026-03-04']), TODAY)).toBe(
      '2026-03-02',
    );
  });

  it('stops at the first gap after the watermark', () => {
    const done = doneIn(['2026-03-04', '2026-03-05', '2026-03-07', '2026-03-08']);
    expect(contiguousWatermark('2026-03-03', START, done, TODAY)).toBe('2026-03-05');
  });

  it('never moves backward', () => {
    expect(contiguousWatermark('2026-03-05', START, () => false, TODAY)).toBe('2026-03-05');
    expect(contiguousWatermark('2026-03-12', START, () => true, TODAY)).toBe('2026-03-12');
  });

  it('never includes today or a later day, and never asks about them', () => {
    const asked: DayString[] = [];
    const mark = contiguousWatermark(
      '2026-03-05',
      START,
      (day) => {
        asked.push(day);
        return true;
      },
      TODAY,
    );
    expect(mark).toBe('2026-03-09');
    expect(asked.every((day) => day < TODAY)).toBe(true);
  });

  it('stays null when startDay is today', () => {
    expect(contiguousWatermark(null, TODAY, () => true, TODAY)).toBeNull();
  });
});

// --- properties over random day sets ------------------------------------------------------------

/**
 * The references below do their own day arithmetic on a precomputed calendar (plain Date, not the
 * module under test): independent of src, and fast enough for thousands of runs.
 */
const CALENDAR: DayString[] = Array.from({ length: 120 }, (_, i) =>
  new Date(Date.UTC(2025, 11, 22 + i)).toISOString().slice(0, 10),
);
const BASE_INDEX = 10; // CALENDAR[10] is 2026-01-01
const dayAt = (index: number): DayString => {
  const day = CALENDAR[index];
  if (day === undefined) throw new RangeError(`calendar index ${index}`);
  return day;
};
const indexOf = (day: DayString): number => CALENDAR.indexOf(day);

/** A small calendar: startDay, today, a watermark consistent with them, the done days, a lookback. */
const scenario = fc
  .record({
    startOffset: fc.integer({ min: 0, max: 5 }),
    // Kept short: every src day step parses a date with luxon, and there are thousands of runs.
    span: fc.integer({ min: 0, max: 14 }),
    watermarkAt: fc.option(fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }), { nil: null }),
    doneOffsets: fc.uniqueArray(fc.integer({ min: -3, max: 22 }), { maxLength: 26 }),
    lookbackDays: fc.integer({ min: 0, max: 6 }),
  })
  .map(({ startOffset, span, watermarkAt, doneOffsets, lookbackDays }) => {
    const start = BASE_INDEX + startOffset;
    // The watermark is null or a day in [startDay, today - 1], as contiguousWatermark produces.
    const watermark =
      watermarkAt === null || span === 0 ? null : dayAt(start + Math.floor(watermarkAt * span));
    const doneDays = new Set(doneOffsets.map((offset) => dayAt(BASE_INDEX + offset)));
    return { startDay: dayAt(start), today: dayAt(start + span), watermark, doneDays, lookbackDays };
  });

interface Scenario {
  startDay: DayString;
  today: DayString;
  watermark: DayString | null;
  doneDays: ReadonlySet<DayString>;
  lookbackDays: number;
}

/** The naive reading of the planner's contract, built as a set and then sorted. */
function referencePlan(s: Scenario): DayString[] {
  const start = indexOf(s.startDay);
  const today = indexOf(s.today);
  const days = new Set<DayString>();
  const firstOpen = s.watermark === null ? start : indexOf(s.watermark) + 1;
  for (let i = firstOpen; i <= today; i++) if (!s.doneDays.has(dayAt(i))) days.add(dayAt(i));
  for (let k = 1; k <= s.lookbackDays; k++) if (today - k >= start) days.add(dayAt(today - k));
  if (today >= start) days.add(s.today);
  return [...days].sort();
}

/** The last day of the done run that starts right after the watermark, found by scanning a list. */
function referenceWatermark(s: Scenario, doneDays: ReadonlySet<DayString>): DayString | null {
  const first = s.watermark === null ? indexOf(s.startDay) : indexOf(s.watermark) + 1;
  const candidates = CALENDAR.slice(first, Math.max(first, indexOf(s.today)));
  const gap = candidates.findIndex((day) => !doneDays.has(day));
  const prefix = gap === -1 ? candidates : candidates.slice(0, gap);
  return prefix.at(-1) ?? s.watermark;
}

describe('planSyncDays and contiguousWatermark on random day sets', () => {
  it('contiguousWatermark is the end of the contiguous done prefix', () => {
    fc.assert(
      fc.property(scenario, (s) => {
        const mark = contiguousWatermark(s.watermark, s.startDay, (day) => s.doneDays.has(day), s.today);
        expect(mark).toBe(referenceWatermark(s, s.doneDays));
        if (s.watermark !== null) expect(mark !== null && mark >= s.watermark).toBe(true);
        if (mark !== null) expect(mark < s.today).toBe(true);
      }),
      { numRuns: 1000 },
    );
  });

  it('planSyncDays is (not done in (watermark, today]) ∪ (lookback days before today) ∪ {today}, ascending, no duplicates', () => {
    fc.assert(
      fc.property(scenario, (s) => {
        const days = planSyncDays(s);
        expect(days).toEqual(referencePlan(s));
        for (let i = 1; i < days.length; i++)
          expect((days[i - 1] as string) < (days[i] as string)).toBe(true);

        // And the plan is enough: once its closed days are done, the watermark reaches yesterday.
        const done = new Set([...s.doneDays, ...days.filter((day) => day < s.today)]);
        const mark = contiguousWatermark(s.watermark, s.startDay, (day) => done.has(day), s.today);
        const yesterday = dayAt(indexOf(s.today) - 1);
        expect(mark).toBe(yesterday < s.startDay ? s.watermark : yesterday);
      }),
      { numRuns: 1000 },
    );
  });
});
