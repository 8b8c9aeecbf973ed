import { DAY_MS, type DayString, dayStartMs } from '../time/days.js';
import { itemIdentity } from './item-identity.js';
import { type ItemOrder, itemTime, orderOf } from './server-reading.js';

/**
 * Reading a day above the server's cap in time slices, where the server honours an ISO instant in
 * startdate and enddate (SPEC-GAPS: paging). The spec shows days; the real service's own client
 * sends instants. Nothing here assumes a server honours them: one request (the probe) tells, and
 * every slice's answer is checked again. Pure: day-slices.ts asks, these functions decide.
 *
 * A slice is the instants [startMs, endMs) of one UTC day. It is asked from 1 ms before its start
 * through its end, so its items come back whatever the server's inclusivity at an instant: an
 * exclusive startdate serves from startMs, an inclusive one from 1 ms earlier; an exclusive
 * enddate serves up to endMs, an inclusive one endMs too. Items at the shared instants come twice
 * and are held once. No inclusivity needs to be learned.
 */
export interface Slice {
  startMs: number;
  endMs: number;
}

/** The bounds of a request that asks with instants: `YYYY-MM-DDThh:mm:ss.sssZ`. */
export interface InstantRange {
  startdate: string;
  enddate: string;
}

/**
 * Slices are halved down to this and no further: a second still above the cap leaves the day
 * truncated. A server that compares instants at a coarser grain than the millisecond would answer
 * narrower slices with items outside them, which the check below takes as instants not honoured.
 */
export const MIN_SLICE_MS = 1000;
/** Requests one day's slices may spend (a 1,500-item day at a cap of 30 takes about 60). */
export const MAX_SLICE_REQUESTS = 2000;

export function sliceRequest(slice: Slice): InstantRange {
  return { startdate: instant(slice.startMs - 1), enddate: instant(slice.endMs) };
}

function instant(ms: number): string {
  return new Date(ms).toISOString();
}

export function daySlice(day: DayString): Slice {
  const startMs = dayStartMs(day);
  return { startMs, endMs: startMs + DAY_MS };
}

/** Whether every reading at the instants serves `time` for `slice`. */
function within(slice: Slice, time: number): boolean {
  return time >= slice.startMs && time < slice.endMs;
}

/** Whether no reading at the instants serves `time` for `slice`. */
function beyond(slice: Slice, time: number): boolean {
  return time < slice.startMs - 1 || time > slice.endMs;
}

/**
 * The probe: the millisecond around a held item whose date holds another held item at another
 * instant, the day's own first. A server that drops the time reads it as that whole date (its
 * answer holds items outside the probe) or, under its bounds, as nothing (the item is missing):
 * either tells. A server that honours it answers that item. The whole day when no item allows.
 */
export function probeSlice(day: DayString, held: readonly unknown[]): Slice {
  const whole = daySlice(day);
  const all = held.map(itemTime).filter((time): time is number => time !== undefined);
  const own = all.filter((time) => within(whole, time));
  return aroundHeldItem(own, all) ?? aroundHeldItem(all, all) ?? whole;
}

function aroundHeldItem(candidates: readonly number[], times: readonly number[]): Slice | undefined {
  const dateOf = (time: number) => Math.floor(time / DAY_MS);
  const nearMidnight = (time: number) => time % DAY_MS < 1 || time % DAY_MS >= DAY_MS - 1;
  const item = candidates.find(
    (time) => !nearMidnight(time) && times.some((other) => dateOf(other) === dateOf(time) && other !== time),
  );
  return item === undefined ? undefined : { startMs: item, endMs: item + 1 };
}

/** What an answer to a slice says of instants: only 'ignored' is ever final for a run. */
export type InstantsEvidence = 'honoured' | 'ignored' | 'unsure';

/**
 * Instants are not honoured when the answer to `slice` holds an item no reading of its instants
 * serves, or, uncut, lacks an item held before that every reading serves. They are honoured as far
 * as this answer tells when it holds items and both hold; an empty answer with nothing held inside
 * the slice tells nothing.
 */
export function instantsVerdict(check: {
  slice: Slice;
  answer: readonly unknown[];
  /** Items held before the answer came. */
  known: readonly unknown[];
  /** Whether the answer may have been cut (our limit or the server's cap). */
  cut: boolean;
}): InstantsEvidence {
  const { slice, answer, known } = check;
  const timeOf = (item: unknown) => itemTime(item);
  if (answer.some((item) => isAt(timeOf(item), (time) => beyond(slice, time)))) return 'ignored';
  const inside = known.filter((item) => isAt(timeOf(item), (time) => within(slice, time)));
  if (!check.cut) {
    const served = new Set(answer.map(itemIdentity));
    if (inside.some((item) => !served.has(itemIdentity(item)))) return 'ignored';
  }
  return answer.length > 0 || inside.length > 0 ? 'honoured' : 'unsure';
}

function isAt(time: number | undefined, test: (time: number) => boolean): boolean {
  return time !== undefined && test(time);
}

/** What follows a slice's answer: nothing more, the slices still to ask, or a cut no slice can mend. */
export type SliceStep = { kind: 'whole' } | { kind: 'more'; slices: Slice[] } | { kind: 'cut' };

/**
 * After a slice's answer: an uncut answer holds the slice whole. A cut one, listed in the order the
 * server has kept, holds everything up to its last item: the rest of the slice is asked from that
 * item's instant on (paging by time, so ties at it come back). Otherwise the slice is halved, down
 * to MIN_SLICE_MS. A slice whose items all share the instant it would page from cannot be read.
 */
export function afterSlice(
  slice: Slice,
  answer: readonly unknown[],
  cut: boolean,
  order: ItemOrder | null,
): SliceStep {
  if (!cut) return { kind: 'whole' };
  const times = answer.map(itemTime);
  const known = times.every((time) => time !== undefined) ? (times as number[]) : [];
  const listed = known.length > 1 ? orderOf(known) : null;
  const last = known[known.length - 1];
  if (last !== undefined && listed !== null && listed === order) {
    if (order === 'oldest-first') {
      if (last >= slice.endMs) return { kind: 'whole' };
      return last > slice.startMs ? { kind: 'more', slices: [{ ...slice, startMs: last }] } : { kind: 'cut' };
    }
    if (order === 'newest-first') {
      if (last < slice.startMs) return { kind: 'whole' };
      return last + 1 < slice.endMs
        ? { kind: 'more', slices: [{ ...slice, endMs: last + 1 }] }
        : { kind: 'cut' };
    }
  }
  const width = slice.endMs - slice.startMs;
  if (width <= MIN_SLICE_MS) return { kind: 'cut' };
  const middle = slice.startMs + Math.floor(width / 2);
  return {
    kind: 'more',
    slices: [
      { startMs: slice.startMs, endMs: middle },
      { startMs: middle, endMs: slice.endMs },
    ],
  };
}
