import { DAY_MS, type DayString, dayStartMs } from '../time/days.js';
import { itemIdentity } from './item-identity.js';
import { datedTimes, type ItemOrder, itemTime, orderOf } from './server-reading.js';

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
  const all = datedTimes(held);
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

/**
 * What an answer to a slice says of instants: only 'ignored' is ever final for a run. 'cut': they
 * are honoured, and the answer was cut at a size no cap the run knows explains.
 */
export type InstantsEvidence = 'honoured' | 'ignored' | 'cut' | 'unsure';

/**
 * Instants are not honoured when the answer to `slice` holds an item no reading of its instants
 * serves, or, uncut and empty, lacks an item held before that every reading serves. They are
 * honoured as far as this answer tells when it holds items and both hold; an empty answer with
 * nothing held inside the slice tells nothing. An answer that keeps inside the slice yet lacks a
 * held item there was cut: a server that drops the time serves whole dates, the slice's own hours
 * and others', but one that lowered its cap (a deploy) cuts every answer at the new size, below the
 * caps the run knows.
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
    if (inside.some((item) => !served.has(itemIdentity(item)))) return answer.length > 0 ? 'cut' : 'ignored';
  }
  return answer.length > 0 || inside.length > 0 ? 'honoured' : 'unsure';
}

function isAt(time: number | undefined, test: (time: number) => boolean): boolean {
  return time !== undefined && test(time);
}

/** What follows a slice's answer: nothing more, the slices still to ask, or a cut no slice can mend. */
export type SliceStep = { kind: 'whole' } | { kind: 'more'; slices: Slice[] } | { kind: 'cut' };

/**
 * Slices sized from a density aim this far below the cap: a day's items are not spread evenly, and
 * a slice that comes back cut costs its request and two more.
 */
export const SLICE_FILL = 0.7;

/**
 * After a slice's answer: an uncut answer holds the slice whole. A cut one, listed in the order the
 * server has kept, holds everything up to its last item: the rest of the slice is asked from that
 * item's instant on (paging by time, so ties at it come back). Otherwise the slice is split in
 * parts sized from `density` (items per millisecond seen in the day's slices read whole), at least
 * halved, down to MIN_SLICE_MS. A slice whose items all share the instant it would page from
 * cannot be read.
 */
export function afterSlice(
  slice: Slice,
  answer: readonly unknown[],
  cut: boolean,
  order: ItemOrder | null,
  density = 0,
): SliceStep {
  if (!cut) return { kind: 'whole' };
  const rest = orderedRest(slice, answer, order);
  if (rest === null) return { kind: 'whole' };
  if (rest !== undefined) return sameSlice(rest, slice) ? { kind: 'cut' } : { kind: 'more', slices: [rest] };
  const width = slice.endMs - slice.startMs;
  if (width <= MIN_SLICE_MS) return { kind: 'cut' };
  const expected = Math.max(answer.length, density * width);
  return { kind: 'more', slices: splitSlice(slice, expected, answer.length) };
}

/**
 * The part of `slice` a cut answer leaves unread, when its request served all of `slice` (and
 * perhaps more around it) and it is listed in the order the server keeps: newest first, it holds
 * every item after its last one; oldest first, every item before. The part keeps the last item's
 * instant, whose ties the cut may have split: they come again and are held once. null when the
 * answer reaches past the slice (read whole); `slice` itself when the answer holds none of it;
 * undefined when the answer's order cannot tell.
 */
export function orderedRest(
  slice: Slice,
  answer: readonly unknown[],
  order: ItemOrder | null,
): Slice | null | undefined {
  const times = answer.map(itemTime);
  if (times.length < 2 || !times.every((time) => time !== undefined)) return undefined;
  const known = times as number[];
  if (orderOf(known) !== order) return undefined;
  const last = known[known.length - 1] as number;
  if (order === 'oldest-first') {
    if (last >= slice.endMs) return null;
    return last > slice.startMs ? { ...slice, startMs: last } : slice;
  }
  if (order === 'newest-first') {
    if (last < slice.startMs) return null;
    return last + 1 < slice.endMs ? { ...slice, endMs: last + 1 } : slice;
  }
  return undefined;
}

function sameSlice(a: Slice, b: Slice): boolean {
  return a.startMs === b.startMs && a.endMs === b.endMs;
}

/**
 * `slice` split in equal parts, each expected to hold SLICE_FILL of `cutAt` items when the slice
 * holds `expected`: at least two (a cut answer says only that more than fit), none narrower than
 * MIN_SLICE_MS unless halving makes it so.
 */
export function splitSlice(slice: Slice, expected: number, cutAt: number): Slice[] {
  const width = slice.endMs - slice.startMs;
  const wanted = Math.ceil(expected / Math.max(1, cutAt * SLICE_FILL));
  const count = Math.max(2, Math.min(wanted, Math.floor(width / MIN_SLICE_MS)));
  const parts: Slice[] = [];
  for (let i = 0; i < count; i++)
    parts.push({
      startMs: slice.startMs + Math.floor((width * i) / count),
      endMs: slice.startMs + Math.floor((width * (i + 1)) / count),
    });
  return parts;
}

/**
 * The slices left of `day` once the day's own cut answers, each to a request that served the whole
 * day under the reading, are taken for slices: ordered, each one narrows what is left to read; in
 * no order, one whose items all fall on the day says the day alone would come back cut too, so it
 * is split at once. Nothing is asked again that an answer already gave.
 *
 * A day request is read under the stored reading, which the server may have changed since (its
 * day moved, a bound's inclusivity flipped): it may not serve the UTC day at all, only part of it
 * and part of a neighbour. Unless the run found its day answers `aligned` with UTC days
 * (day-slices.ts), an answer counts only for the span its own items prove held, from its first
 * item to its last in the order served, not for the day its request meant; the hours on either
 * side are asked as slices.
 */
export function slicesAfterDay(
  day: DayString,
  answers: readonly DayAnswer[],
  order: ItemOrder | null,
  aligned = false,
): Slice[] {
  const whole = daySlice(day);
  let unread: Slice[] = [whole];
  for (const answer of answers) {
    const held = heldSpan(answer, order);
    if (held === undefined) continue;
    // Aligned, the request served the day from the midnight the order lists first.
    if (aligned && order === 'oldest-first') held.startMs = Math.min(held.startMs, whole.startMs);
    if (aligned && order === 'newest-first') held.endMs = Math.max(held.endMs, whole.endMs);
    unread = unread.flatMap((slice) => outside(slice, held));
  }
  if (unread.length !== 1 || !sameSlice(unread[0] as Slice, whole)) return unread;
  const onDay = answers.filter((answer) => answer.onDay);
  const most = Math.max(0, ...onDay.map((answer) => answer.count));
  return most > 1 ? splitSlice(whole, most, most) : [whole];
}

/**
 * What slicesAfterDay goes by of one of a day's cut answers, kept in place of its items: a day
 * above the cap is asked again and again (a larger limit, a narrower request, its halves), each
 * answer up to the cap parsed anew, and holding every one of them would hold the cap's items as
 * many times over.
 */
export interface DayAnswer {
  count: number;
  /**
   * The order of its items' dt as served; undefined when that cannot tell a span (fewer than two
   * items, or one without a readable dt).
   */
  served: ItemOrder | null | undefined;
  /** The dt of its first and last item as served (epoch ms); 0 when `served` is undefined. */
  first: number;
  last: number;
  /** Every item of it falls on the day. */
  onDay: boolean;
}

export function dayAnswerOf(
  day: DayString,
  answer: readonly unknown[],
  /** The items' times (itemTime), where the caller read them already. */
  times: readonly (number | undefined)[] = answer.map(itemTime),
): DayAnswer {
  const whole = daySlice(day);
  const onDay = times.every((time) => isAt(time, (t) => within(whole, t)));
  if (times.length < 2 || !times.every((time) => time !== undefined))
    return { count: answer.length, served: undefined, first: 0, last: 0, onDay };
  const known = times as number[];
  return {
    count: answer.length,
    served: orderOf(known),
    first: known[0] as number,
    last: known[known.length - 1] as number,
    onDay,
  };
}

/**
 * The instants a cut answer listed in the server's order holds whole, whatever the request it
 * answers: its served span is one stretch of time holding its first item, so every item between
 * its first and its last was served. Not the last item's instant, whose ties the cut may have
 * split. undefined when the answer's order cannot tell.
 */
export function heldSpan(answer: DayAnswer, order: ItemOrder | null): Slice | undefined {
  if (answer.served === undefined || answer.served !== order) return undefined;
  if (order === 'oldest-first') return { startMs: answer.first, endMs: answer.last };
  if (order === 'newest-first') return { startMs: answer.last + 1, endMs: answer.first + 1 };
  return undefined;
}

/** The parts of `slice` before and after `held`. */
function outside(slice: Slice, held: Slice): Slice[] {
  const parts = [
    { startMs: slice.startMs, endMs: Math.min(slice.endMs, held.startMs) },
    { startMs: Math.max(slice.startMs, held.endMs), endMs: slice.endMs },
  ];
  return parts.filter((part) => part.endMs > part.startMs);
}
