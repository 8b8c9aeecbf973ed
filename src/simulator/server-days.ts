import { DAY_MS, dayStartMs } from '../time/days.js';

/**
 * The server's own calendar (spec 1, 2: the server's day is not shown). Server day S covers the
 * instants [S 00:00Z - offset, S+1 00:00Z - offset): with offset -300 (UTC-5), day S runs from
 * S 05:00Z to S+1 05:00Z. Items keep their UTC `dt`; only which day they belong to moves.
 */
const MINUTE_MS = 60_000;

/** The server day holding the instant. */
export function serverDayOf(instantMs: number, offsetMinutes: number): string {
  return utcDayOf(instantMs + offsetMinutes * MINUTE_MS);
}

/** The UTC day holding the instant. */
export function utcDayOf(instantMs: number): string {
  return new Date(instantMs).toISOString().slice(0, 10);
}

/** When server day `day` starts, as a UTC instant. */
function serverDayStartMs(day: string, offsetMinutes: number): number {
  return dayStartMs(day) - offsetMinutes * MINUTE_MS;
}

/**
 * The instants [startMs, endMs) of server days `first` through `last`; an absent bound is open.
 */
export function serverDaySpan(
  first: string | undefined,
  last: string | undefined,
  offsetMinutes: number,
): { startMs: number; endMs: number } {
  return {
    startMs: first === undefined ? Number.NEGATIVE_INFINITY : serverDayStartMs(first, offsetMinutes),
    endMs: last === undefined ? Number.POSITIVE_INFINITY : serverDayStartMs(last, offsetMinutes) + DAY_MS,
  };
}
