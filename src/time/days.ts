/**
 * Days are `YYYY-MM-DD` strings in UTC throughout: they sort and compare as strings, and a
 * string never shifts with the machine's time zone. The one date library of the tool and of the
 * simulator.
 */
export type DayString = string;

export const HOUR_MS = 3_600_000;
export const DAY_MS = 24 * HOUR_MS;

const DAY_SHAPE = /^\d{4}-\d{2}-\d{2}$/;

/** Whether `value` is a real calendar day `YYYY-MM-DD` (2026-02-30 is not). */
export function isDay(value: string): boolean {
  if (!DAY_SHAPE.test(value)) return false;
  const ms = Date.parse(`${value}T00:00:00.000Z`);
  // Date.parse rolls 2026-02-30 over to March: only a day that survives the round trip is real.
  return !Number.isNaN(ms) && new Date(ms).toISOString().startsWith(value);
}

/**
 * Start instants of the days met so far. A day's plan asks for the same few days' midnights once
 * per item of every answer, and checking and parsing the string each time was a sixth of its CPU;
 * a run meets a few thousand days at most, so the map is emptied past that, never grown unbounded.
 */
const starts = new Map<string, number>();
const STARTS_KEPT = 10_000;

/** The instant (ms since the epoch) the day starts in UTC; RangeError when it is not a day. */
export function dayStartMs(day: DayString): number {
  const known = starts.get(day);
  if (known !== undefined) return known;
  if (!isDay(day)) throw new RangeError(`not a day: ${day}`);
  const ms = Date.parse(`${day}T00:00:00.000Z`);
  if (starts.size >= STARTS_KEPT) starts.clear();
  starts.set(day, ms);
  return ms;
}

/** Days since 1970-01-01, used to keep integer ids of different days apart. */
export function epochDay(day: DayString): number {
  return Math.round(dayStartMs(day) / DAY_MS);
}

/**
 * Days rendered so far, by their index since the epoch: walking a range of days (a request's,
 * every answer judged again) renders the same few days over and over, and a Date and its ISO text
 * per step were a seventh of a day plan's CPU. Emptied past STARTS_KEPT, as the starts are.
 */
const rendered = new Map<number, DayString>();

function dayOfIndex(index: number): DayString {
  let day = rendered.get(index);
  if (day === undefined) {
    day = new Date(index * DAY_MS).toISOString().slice(0, 10);
    if (rendered.size >= STARTS_KEPT) rendered.clear();
    rendered.set(index, day);
  }
  return day;
}

export function addDays(day: DayString, days: number): DayString {
  return dayOfIndex(epochDay(day) + days);
}

/** The last day dayOfTime rendered: a day's items are looked at one after the other. */
let lastDay: { index: number; day: DayString } = { index: Number.NaN, day: '' };

/**
 * The UTC day of an instant (ms since the epoch), as `new Date(ms).toISOString().slice(0, 10)`
 * says it: rendered once per day in a row, not once per item (10,000 items of one day, several
 * times a window).
 */
export function dayOfTime(ms: number): DayString {
  const index = Math.floor(ms / DAY_MS);
  if (index !== lastDay.index) lastDay = { index, day: dayOfIndex(index) };
  return lastDay.day;
}

export function todayUtc(now: Date = new Date()): DayString {
  return now.toISOString().slice(0, 10);
}

/** Every day from `from` through `to`, both included; empty when from > to. */
export function daysFrom(from: DayString, to: DayString): DayString[] {
  const days: DayString[] = [];
  const count = dayDiff(from, to);
  for (let i = 0; i <= count; i++) days.push(addDays(from, i));
  return days;
}

/** Whole days from `from` to `to` (0 when equal, negative when to is earlier). */
export function dayDiff(from: DayString, to: DayString): number {
  return Math.round((dayStartMs(to) - dayStartMs(from)) / DAY_MS);
}

/** The spec's timestamp shape, `YYYY-MM-DDThh:mm:ss.sssZ`. */
export function isoAt(ms: number): string {
  return new Date(ms).toISOString();
}

/** The earlier of two days (they compare as strings). */
export function minDay(a: DayString, b: DayString): DayString {
  return a <= b ? a : b;
}

export function maxDay(a: DayString, b: DayString): DayString {
  return a >= b ? a : b;
}
