import { daySchema } from '../schemas/timestamp.js';

/** UTC calendar days as `YYYY-MM-DD` strings; they sort as strings in calendar order. */
export const DAY_MS = 86_400_000;

export function isDay(value: string): boolean {
  return daySchema.safeParse(value).success;
}

export function dayStartMs(day: string): number {
  return Date.parse(`${day}T00:00:00.000Z`);
}

/** Days since 1970-01-01, used to keep integer ids of different days apart. */
export function epochDay(day: string): number {
  return Math.round(dayStartMs(day) / DAY_MS);
}

export function addDays(day: string, count: number): string {
  return new Date(dayStartMs(day) + count * DAY_MS).toISOString().slice(0, 10);
}

/** Number of days from `from` to `to` (0 when equal, negative when `to` is earlier). */
export function daysBetween(from: string, to: string): number {
  return Math.round((dayStartMs(to) - dayStartMs(from)) / DAY_MS);
}

/** Every day from `from` through `to`, both included. */
export function dayRange(from: string, to: string): string[] {
  const days: string[] = [];
  const count = daysBetween(from, to);
  for (let i = 0; i <= count; i++) days.push(addDays(from, i));
  return days;
}

export function todayUtc(now: Date = new Date()): string {
  return now.toISOString().slice(0, 10);
}

/** The spec's timestamp shape, `YYYY-MM-DDThh:mm:ss.sssZ`. */
export function isoAt(ms: number): string {
  return new Date(ms).toISOString();
}

/** The earlier of two days (they compare as strings). */
export function minDay(a: string, b: string): string {
  return a <= b ? a : b;
}

export function maxDay(a: string, b: string): string {
  return a >= b ? a : b;
}
