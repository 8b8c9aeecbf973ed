import { DateTime } from 'luxon';

/**
 * Days are `YYYY-MM-DD` strings in UTC throughout: they sort and compare as strings, and a
 * string never shifts with the machine's time zone.
 */
export type DayString = string;

function parse(day: DayString): DateTime {
  const parsed = DateTime.fromISO(day, { zone: 'utc' });
  if (!parsed.isValid) throw new RangeError(`not a day: ${day}`);
  return parsed;
}

export function addDays(day: DayString, days: number): DayString {
  return parse(day).plus({ days }).toISODate() as DayString;
}

export function todayUtc(now: Date): DayString {
  return DateTime.fromJSDate(now, { zone: 'utc' }).toISODate() as DayString;
}

/** Every day from `from` through `to`, both included; empty when from > to. */
export function daysFrom(from: DayString, to: DayString): DayString[] {
  const days: DayString[] = [];
  for (let day = from; day <= to; day = addDays(day, 1)) days.push(day);
  return days;
}

/** Whole days from `from` to `to` (negative when to is earlier). */
export function dayDiff(from: DayString, to: DayString): number {
  return Math.round(parse(to).diff(parse(from), 'days').days);
}

export function minDay(a: DayString, b: DayString): DayString {
  return a <= b ? a : b;
}

export function maxDay(a: DayString, b: DayString): DayString {
  return a >= b ? a : b;
}
