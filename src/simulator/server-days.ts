import { DateTime } from 'luxon';
import { addDays, dayStartMs } from '../time/days.js';
import type { ServingSettings } from './settings.js';

/**
 * The server's own calendar (spec 1, 2: the server's day is not shown). With a fixed offset,
 * server day S covers the instants [S 00:00Z - offset, S+1 00:00Z - offset): with offset -300
 * (UTC-5), day S runs from S 05:00Z to S+1 05:00Z. With a time zone, day S runs from midnight to
 * midnight on that zone's clock, so the days that clock changes for daylight saving last 23 or
 * 25 hours, and the offset of every day after the change moves by an hour. Items keep their UTC
 * `dt`; only which day they belong to moves.
 */
export type ServerClock = Pick<ServingSettings, 'dayOffsetMinutes' | 'dayZone'>;

const MINUTE_MS = 60_000;

/** The server day holding the instant. */
export function serverDayOf(instantMs: number, clock: ServerClock): string {
  if (clock.dayZone !== null)
    return DateTime.fromMillis(instantMs, { zone: clock.dayZone }).toISODate() ?? utcDayOf(instantMs);
  return utcDayOf(instantMs + clock.dayOffsetMinutes * MINUTE_MS);
}

/** The UTC day holding the instant. */
export function utcDayOf(instantMs: number): string {
  return new Date(instantMs).toISOString().slice(0, 10);
}

/** Whether the server's days are UTC's. */
export function utcClock(clock: ServerClock): boolean {
  return clock.dayZone === null && clock.dayOffsetMinutes === 0;
}

/**
 * When server day `day` starts, as a UTC instant: its zone's midnight (where a clock skips
 * midnight, the first instant of the day it shows).
 */
function serverDayStartMs(day: string, clock: ServerClock): number {
  if (clock.dayZone !== null) return DateTime.fromISO(day, { zone: clock.dayZone }).toMillis();
  return dayStartMs(day) - clock.dayOffsetMinutes * MINUTE_MS;
}

/**
 * The instants [startMs, endMs) of server days `first` through `last`; an absent bound is open.
 */
export function serverDaySpan(
  first: string | undefined,
  last: string | undefined,
  clock: ServerClock,
): { startMs: number; endMs: number } {
  return {
    startMs: first === undefined ? Number.NEGATIVE_INFINITY : serverDayStartMs(first, clock),
    endMs: last === undefined ? Number.POSITIVE_INFINITY : serverDayStartMs(addDays(last, 1), clock),
  };
}
