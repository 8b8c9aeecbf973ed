import type { WindowedResource } from '../schemas/resources.js';
import type { GroundTruth } from './truth.js';

/**
 * Day-level readings of a ground truth, for tests of truncation ("every truly truncated day
 * flagged"): how many items each day holds, and which days a one-day request cannot return whole.
 * `by` picks the calendar: 'utc' days, or the 'server' days the server filters by (the two are
 * the same unless the simulator runs with a dayOffsetMinutes).
 */
export type DayCalendar = 'utc' | 'server';

/** Items served per day, malformed ones included (they take a place in a capped answer too). */
export function itemsPerDay(
  truth: Pick<GroundTruth, 'meta'>,
  resource: WindowedResource,
  by: DayCalendar = 'utc',
): Map<string, number> {
  const counts = by === 'utc' ? truth.meta.itemsPerUtcDay : truth.meta.itemsPerServerDay;
  return new Map(Object.entries(counts[resource]));
}

/**
 * Days holding more items than one response may carry: the days a client asking for exactly one
 * day must flag truncated. `cap` defaults to the simulator's cap for the resource; pass the
 * smaller limit a client asks with, if any.
 */
export function daysAboveCap(
  truth: Pick<GroundTruth, 'meta'>,
  resource: WindowedResource,
  cap: number = truth.meta.caps[resource],
  by: DayCalendar = 'server',
): string[] {
  return [...itemsPerDay(truth, resource, by)]
    .filter(([, count]) => count > cap)
    .map(([day]) => day)
    .sort();
}
