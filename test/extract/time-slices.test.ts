import { describe, expect, it } from 'vitest';
import {
  afterSlice,
  daySlice,
  instantsVerdict,
  MIN_SLICE_MS,
  probeSlice,
  type Slice,
  sliceRequest,
} from '../../src/extract/time-slices.js';

// The slicing decisions, without a server: what to ask, and what an answer says.

const DAY = '2026-03-10';
const MIDNIGHT = Date.parse(`${DAY}T00:00:00.000Z`);
const HOUR = 3_600_000;
const at = (ms: number, id = `i${ms}`) => ({ id, dt: new Date(ms).toISOString() });
/** Items at these hours of the day. */
const atHours = (...hours: number[]) => hours.map((hour) => at(MIDNIGHT + hour * HOUR));
const WHOLE: Slice = daySlice(DAY);

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

  it('ignored when an uncut answer lacks an item held inside the slice (the time dropped: other days read)', () => {
    expect(instantsVerdict({ slice, answer: [], known, cut: false })).toBe('ignored');
    expect(instantsVerdict({ slice, answer: atHours(2), known, cut: false })).toBe('ignored');
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
