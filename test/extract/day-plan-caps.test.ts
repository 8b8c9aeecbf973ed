import { describe, expect, it } from 'vitest';
import { newDayFetch, planDay } from '../../src/extract/day-plan.js';
import type { FetchedDay, LimitPolicy, ResourceKnowledge } from '../../src/extract/fetch-day.js';
import type { Answer, Plan } from '../../src/extract/plan-steps.js';
import { emptyReading, suspectCap } from '../../src/extract/server-reading.js';
import type { DayString } from '../../src/time/days.js';

/**
 * A day settled whole records the size of the answer it was settled on (FetchedDay.uncappedServed),
 * judged below every cap the run knew then: a cap proved later at that size reopens it. Whether
 * the size is a known cap when the day settles says nothing: another window (or another worker,
 * heard) may prove it while the day's reading check is out, and that proof judged nothing of the
 * answer. A day read as a cut one records no size: its answers were judged knowing the cap.
 */
const DAY = '2026-03-10' as DayString;
const POLICY: LimitPolicy = { limit: 1000, maxLimit: 4000 };
const HOUR_MS = 3_600_000;

/** `count` items of `day`, one every ten minutes from 01:00, ids prefixed. */
function items(count: number, day: string, prefix: string): { id: string; dt: string }[] {
  const start = Date.parse(`${day}T01:00:00.000Z`);
  return Array.from({ length: count }, (_, i) => ({
    id: `${prefix}${i}`,
    dt: new Date(start + (i * HOUR_MS) / 6).toISOString(),
  }));
}

/**
 * An inclusive UTC reading an earlier run stored, not yet checked this run (the check asks a wide
 * request before the day settles): no cap seen, an answer of 100 the largest.
 */
function knowledge(): ResourceKnowledge {
  return {
    reading: { ...emptyReading(), headMs: 60_000, tailMs: 86_400_000 - 60_000, largestResponse: 100 },
  };
}

/** Drives `plan`, answering each request with `answer(i)`; `between(i)` runs before answer i. */
function drive(
  plan: Plan<FetchedDay>,
  answer: (i: number) => Answer,
  between: (i: number) => void,
): FetchedDay {
  let step = plan.next();
  for (let i = 0; !step.done; i++) {
    between(i);
    step = plan.next(answer(i));
  }
  return step.value;
}

describe("a day's answer at a size a cap is proved at while the day is read", () => {
  // The day's own answer holds 60 items, fewer than the largest before: whole as far as the run
  // knows. The run's check of the stored reading then asks a wide request before the day settles.
  const own = items(60, DAY, 'a');
  const wide = [...items(10, '2026-03-09', 'b'), ...own, ...items(10, '2026-03-11', 'c')];
  const answer = (i: number): Answer => ({ kind: 'items', items: i === 0 ? own : wide });

  it('records the size when the cap came after the answer: the day may be read again', () => {
    const k = knowledge();
    const day = drive(planDay(newDayFetch('feedback', DAY, POLICY, k)), answer, (i) => {
      // Another window (or worker, heard) proves 60 a cap while the check's request is out.
      if (i === 1) suspectCap(k.reading, 60);
    });
    expect(day).toMatchObject({ truncated: false, requests: 2, uncappedServed: 60 });
    expect(day.onDay).toHaveLength(60);
  });

  it('records it too where no cap at that size is known at all', () => {
    const day = drive(planDay(newDayFetch('feedback', DAY, POLICY, knowledge())), answer, () => {});
    expect(day).toMatchObject({ truncated: false, uncappedServed: 60 });
  });

  it('records nothing where the cap was known when the answer came: the day was read as a cut one', () => {
    const k = knowledge();
    suspectCap(k.reading, 60);
    const day = drive(planDay(newDayFetch('feedback', DAY, POLICY, k)), answer, () => {});
    expect(day.uncappedServed).toBeUndefined();
  });
});
