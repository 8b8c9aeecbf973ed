import { describe, expect, it } from 'vitest';
import type { ItemOrder } from '../../src/extract/server-reading.js';
import {
  afterSlice,
  dayAnswerOf,
  daySlice,
  instantsVerdict,
  MIN_SLICE_MS,
  orderedRest,
  probeSlice,
  SLICE_FILL,
  type Slice,
  sliceRequest,
  slicesAfterDay as slicesAfterDayAnswers,
  splitSlice,
} from '../../src/extract/time-slices.js';

// The slicing decisions, without a server: what to ask, and what an answer says.

const DAY = '2026-03-10';
const MIDNIGHT = Date.parse(`${DAY}T00:00:00.000Z`);
const HOUR = 3_600_000;
const at = (ms: number, id = `i${ms}`) => ({ id, dt: new Date(ms).toISOString() });
/** Items at these hours of the day. */
const atHours = (...hours: number[]) => hours.map((hour) => at(MIDNIGHT + hour * HOUR));
const WHOLE: Slice = daySlice(DAY);
/** The slices left after the day's cut answers, each taken as the day's plan keeps it. */
const slicesAfterDay = (day: string, answers: readonly (readonly unknown[])[], ...rest: [ItemOrder | null]) =>
  slicesAfterDayAnswers(
    day,
    answers.map((answer) => dayAnswerOf(day, answer)),
    ...rest,
  );

describe('a slice is asked with instants that hold it under every inclusivity', () => {
  it('from 1 ms before its start through its end', () => {
    expect(sliceRequest(WHOLE)).toEqual({
      startdate: '2026-03-09T23:59:59.999Z',
      enddate: '2026-03-11T00:00:00.000Z',
    });
  });
});

describe('the probe', () => {
  it("is the millisecond around one of the day's held items whose date holds another instant", () => {
    expect(probeSlice(DAY, atHours(2, 5, 9, 20))).toEqual({
      startMs: MIDNIGHT + 2 * HOUR,
      endMs: MIDNIGHT + 2 * HOUR + 1,
    });
  });

  it("with nothing of the day held, is another day's item so placed", () => {
    const before = [at(MIDNIGHT - 3 * HOUR), at(MIDNIGHT - HOUR)];
    expect(probeSlice(DAY, before)).toEqual({ startMs: MIDNIGHT - 3 * HOUR, endMs: MIDNIGHT - 3 * HOUR + 1 });
  });

  it('is the whole day when no held item is so placed', () => {
    expect(probeSlice(DAY, [at(MIDNIGHT - HOUR), at(MIDNIGHT + 30 * HOUR)])).toEqual(WHOLE);
  });
});

describe('instantsVerdict', () => {
  const slice = { startMs: MIDNIGHT, endMs: MIDNIGHT + 9 * HOUR };
  const known = atHours(2, 5, 9, 20);

  it('ignored when an item comes back that no reading of the instants serves', () => {
    const answer = atHours(2, 5, 9, 20);
    expect(instantsVerdict({ slice, answer, known, cut: false })).toBe('ignored');
    // Even one past the end by a millisecond.
    expect(instantsVerdict({ slice, answer: [at(slice.endMs + 1)], known: [], cut: true })).toBe('ignored');
  });

  it('ignored when an uncut answer is empty though an item is held inside the slice (the time dropped: other days read)', () => {
    expect(instantsVerdict({ slice, answer: [], known, cut: false })).toBe('ignored');
  });

  it('cut, not ignored, when an answer keeps inside the slice yet lacks an item held there: a cap lowered since the run learned it', () => {
    // A server that drops the time serves whole dates: the slice's hours with the others'.
    expect(instantsVerdict({ slice, answer: atHours(2), known, cut: false })).toBe('cut');
    expect(instantsVerdict({ slice, answer: atHours(2, 20), known, cut: false })).toBe('ignored');
    // Cut at a cap the run knows, it lacks what it lacks by that cap.
    expect(instantsVerdict({ slice, answer: atHours(2), known, cut: true })).toBe('honoured');
  });

  it('honoured when the answer keeps inside the instants, items at them included, whether or not it was cut', () => {
    const answer = [at(slice.startMs - 1), ...atHours(2, 5), at(slice.endMs)];
    expect(instantsVerdict({ slice, answer, known, cut: false })).toBe('honoured');
    expect(instantsVerdict({ slice, answer: atHours(2), known, cut: true })).toBe('honoured');
  });

  it('unsure when the answer is empty and nothing held lies inside', () => {
    expect(instantsVerdict({ slice, answer: [], known: atHours(20), cut: false })).toBe('unsure');
  });
});

describe('afterSlice', () => {
  const answer = atHours(1, 2, 3);

  it('an uncut answer holds the slice whole', () => {
    expect(afterSlice(WHOLE, answer, false, 'unordered')).toEqual({ kind: 'whole' });
  });

  it('oldest first, a cut answer pages on from its last item, which is asked again', () => {
    expect(afterSlice(WHOLE, answer, true, 'oldest-first')).toEqual({
      kind: 'more',
      slices: [{ startMs: MIDNIGHT + 3 * HOUR, endMs: WHOLE.endMs }],
    });
  });

  it('newest first, a cut answer pages back through its last item', () => {
    const newest = [...answer].reverse();
    expect(afterSlice(WHOLE, newest, true, 'newest-first')).toEqual({
      kind: 'more',
      slices: [{ startMs: MIDNIGHT, endMs: MIDNIGHT + HOUR + 1 }],
    });
  });

  it('a cut answer that reaches past the slice holds it whole', () => {
    expect(afterSlice(WHOLE, [...answer, at(WHOLE.endMs)], true, 'oldest-first')).toEqual({ kind: 'whole' });
    expect(afterSlice(WHOLE, [...[...answer].reverse(), at(MIDNIGHT - 1)], true, 'newest-first')).toEqual({
      kind: 'whole',
    });
  });

  it('in no order the server keeps, a cut slice is halved', () => {
    expect(afterSlice(WHOLE, atHours(3, 1, 2), true, 'unordered')).toEqual({
      kind: 'more',
      slices: [
        { startMs: MIDNIGHT, endMs: MIDNIGHT + 12 * HOUR },
        { startMs: MIDNIGHT + 12 * HOUR, endMs: WHOLE.endMs },
      ],
    });
    // An answer in an order the server has not kept all along is not paged by.
    expect(afterSlice(WHOLE, answer, true, 'unordered')).toMatchObject({ kind: 'more' });
  });

  it('stays cut at the smallest slice, or where every item shares the instant it would page from', () => {
    const smallest = { startMs: MIDNIGHT, endMs: MIDNIGHT + MIN_SLICE_MS };
    expect(afterSlice(smallest, [at(MIDNIGHT + 10), at(MIDNIGHT + 5)], true, 'unordered')).toEqual({
      kind: 'cut',
    });
    const tied = [at(MIDNIGHT - 1, 'a'), at(MIDNIGHT, 'b')];
    expect(afterSlice(WHOLE, tied, true, 'oldest-first')).toEqual({ kind: 'cut' });
  });
});

describe('orderedRest: what a cut answer to a request serving the whole slice leaves unread', () => {
  const wider = [at(WHOLE.endMs + HOUR), ...atHours(20, 18, 17)];

  it('newest first, everything after its last item is held: the rest ends just past it', () => {
    expect(orderedRest(WHOLE, wider, 'newest-first')).toEqual({
      startMs: MIDNIGHT,
      endMs: MIDNIGHT + 17 * HOUR + 1,
    });
  });

  it('oldest first, everything before its last item is held: the rest starts at it', () => {
    const oldest = [at(MIDNIGHT - HOUR), ...atHours(2, 5)];
    expect(orderedRest(WHOLE, oldest, 'oldest-first')).toEqual({
      startMs: MIDNIGHT + 5 * HOUR,
      endMs: WHOLE.endMs,
    });
  });

  it('an answer that stops short of the slice leaves it whole; one past it reads it', () => {
    const nextDay = [at(WHOLE.endMs + 2 * HOUR), at(WHOLE.endMs + HOUR)];
    expect(orderedRest(WHOLE, nextDay, 'newest-first')).toEqual(WHOLE);
    expect(orderedRest(WHOLE, [...atHours(3, 1), at(MIDNIGHT - 1)], 'newest-first')).toBeNull();
  });

  it('in no order, or an order the server has not kept, it cannot tell', () => {
    expect(orderedRest(WHOLE, atHours(3, 1, 2), 'unordered')).toBeUndefined();
    expect(orderedRest(WHOLE, atHours(3, 2, 1), 'oldest-first')).toBeUndefined();
  });
});

describe("slicesAfterDay: the day's own cut answer counts for the span its items prove", () => {
  it("newest first, the slices asked are what the day's answer left, not the day again", () => {
    // Its newest item proves nothing of the hour after it: the request may have ended there.
    expect(slicesAfterDay(DAY, [atHours(23, 20, 9)], 'newest-first')).toEqual([
      { startMs: MIDNIGHT, endMs: MIDNIGHT + 9 * HOUR + 1 },
      { startMs: MIDNIGHT + 23 * HOUR + 1, endMs: WHOLE.endMs },
    ]);
  });

  it('a day request the server no longer serves as the UTC day leaves the hours it missed to ask', () => {
    // Learned on a UTC server, asked of one whose day now starts 5 h later: the answer, oldest
    // first, starts at 05:10, and the hours before it were never served.
    expect(slicesAfterDay(DAY, [atHours(5.25, 6, 9)], 'oldest-first')).toEqual([
      { startMs: MIDNIGHT, endMs: MIDNIGHT + 5.25 * HOUR },
      { startMs: MIDNIGHT + 9 * HOUR, endMs: WHOLE.endMs },
    ]);
    // One that reaches past both midnights proves the day whole.
    const across = [at(MIDNIGHT - HOUR), ...atHours(12), at(WHOLE.endMs + HOUR)];
    expect(slicesAfterDay(DAY, [across], 'oldest-first')).toEqual([]);
  });

  it('several answers narrow it in turn (a larger limit, a wider check)', () => {
    const answers = [atHours(23, 20, 9), [at(WHOLE.endMs + HOUR), ...atHours(8, 4)]];
    expect(slicesAfterDay(DAY, answers, 'newest-first')).toEqual([
      { startMs: MIDNIGHT, endMs: MIDNIGHT + 4 * HOUR + 1 },
    ]);
  });

  it('in no order, a cut answer all on the day is split at once: the day alone would come back cut', () => {
    expect(slicesAfterDay(DAY, [atHours(3, 1, 2)], 'unordered')).toHaveLength(2);
    // With items of other days it says nothing of the day alone: the day is asked.
    expect(slicesAfterDay(DAY, [[...atHours(3, 1), at(MIDNIGHT - HOUR)]], 'unordered')).toEqual([WHOLE]);
    expect(slicesAfterDay(DAY, [], 'newest-first')).toEqual([WHOLE]);
  });
});

describe('splitSlice: parts sized from the density seen, below the cap with margin', () => {
  it('halves when the answer says only that more than the cap came', () => {
    expect(splitSlice(WHOLE, 30, 30)).toEqual([
      { startMs: MIDNIGHT, endMs: MIDNIGHT + 12 * HOUR },
      { startMs: MIDNIGHT + 12 * HOUR, endMs: WHOLE.endMs },
    ]);
  });

  it('splits in as many parts as the expected items need at SLICE_FILL of the cap', () => {
    const parts = splitSlice(WHOLE, 90, 30);
    expect(parts).toHaveLength(Math.ceil(90 / (30 * SLICE_FILL)));
    expect(parts[0]?.startMs).toBe(WHOLE.startMs);
    expect(parts[parts.length - 1]?.endMs).toBe(WHOLE.endMs);
    expect(parts.slice(1).map((part) => part.startMs)).toEqual(parts.slice(0, -1).map((part) => part.endMs));
  });

  it('never below the smallest slice', () => {
    const narrow = { startMs: MIDNIGHT, endMs: MIDNIGHT + 3 * MIN_SLICE_MS };
    expect(splitSlice(narrow, 1000, 30)).toHaveLength(3);
  });

  it('afterSlice sizes a cut slice in no order from the density of the slices read whole', () => {
    const cutAnswer = atHours(3, 1, 2);
    // 9 items an hour seen: 216 expected over the day, at 2.1 a part (70% of 3) that is 103 parts.
    const step = afterSlice(WHOLE, cutAnswer, true, 'unordered', 9 / HOUR);
    expect(step.kind === 'more' && step.slices.length).toBe(Math.ceil(216 / (3 * SLICE_FILL)));
  });
});
