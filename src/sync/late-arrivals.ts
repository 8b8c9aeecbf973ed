/**
 * Late data: items a run finds new on days the ledger already held as done (read whole before).
 * They are what INSIGHTS_LOOKBACK_DAYS exists for; counting them by the age of their day tells
 * whether the lookback is long enough, or longer than it needs to be.
 */
import { type DayString, dayDiff } from '../time/days.js';
import type { WindowOutcome } from './outcomes.js';

export interface LateArrival {
  source: string;
  resource: WindowOutcome['resource'];
  /** The run's day minus the items' day: 1 is yesterday. */
  dayAge: number;
  items: number;
}

/** The share of late items a lookback should reach. */
const LATE_SHARE = 0.999;

export const dayKey = (source: string, resource: string, day: string) =>
  `${source}\u0000${resource}\u0000${day}`;

/** Items of one day stored new by the run (from the warehouse: whichever window stored them). */
export interface NewOnDay {
  source: string;
  resource: WindowOutcome['resource'];
  day: string;
  items: number;
}

/** Of the items a run stored new, those on days read before, summed per resource and age of the day. */
export function lateArrivalsOf(
  stored: readonly NewOnDay[],
  readBefore: ReadonlySet<string>,
  today: DayString,
): LateArrival[] {
  const sums = new Map<string, LateArrival>();
  for (const w of stored) {
    if (w.items <= 0 || !readBefore.has(dayKey(w.source, w.resource, w.day))) continue;
    const dayAge = dayDiff(w.day as DayString, today);
    const id = dayKey(w.source, w.resource, String(dayAge));
    const sum = sums.get(id) ?? { source: w.source, resource: w.resource, dayAge, items: 0 };
    sum.items += w.items;
    sums.set(id, sum);
  }
  return [...sums.values()];
}

/**
 * The smallest lookback (in days) whose re-reads found `share` of the late items: the age of the
 * day below which that share of them fell. null without late items.
 */
export function lookbackCovering(
  byAge: readonly { dayAge: number; items: number }[],
  share = LATE_SHARE,
): number | null {
  const total = byAge.reduce((sum, a) => sum + a.items, 0);
  if (total === 0) return null;
  let seen = 0;
  for (const a of [...byAge].sort((x, y) => x.dayAge - y.dayAge)) {
    seen += a.items;
    if (seen >= share * total) return a.dayAge;
  }
  return null;
}

/** What `status` shows of late data, per source and resource. */
export interface LateArrivalStatus {
  source: string;
  resource: string;
  /** Late items found in the period. */
  items: number;
  /** Of them, per age of their day (ascending). */
  byAge: { dayAge: number; items: number }[];
  /** The lookback that would have caught LATE_SHARE of them. */
  lookbackCovering: number | null;
  /** The lookback a sync runs with (INSIGHTS_LOOKBACK_DAYS). */
  lookbackDays: number;
  /**
   * Late items on the oldest day the lookback re-reads: older ones may exist that no sync
   * re-reads; only a backfill would find them.
   */
  atTheEdge: number;
}

/** Days of late-arrival records `status` sums over. */
export const LATE_PERIOD_DAYS = 30;

/** One line of `status` per source and resource that had late items. */
export function describeLateArrivals(s: LateArrivalStatus): string {
  const spread = s.byAge.map((a) => `${a.items} ${a.dayAge} d old`).join(', ');
  const covering =
    s.lookbackCovering === null
      ? ''
      : `; a lookback of ${s.lookbackCovering} ${s.lookbackCovering === 1 ? 'day' : 'days'} catches ${LATE_SHARE * 100}% (now ${s.lookbackDays})`;
  const edge =
    s.atTheEdge === 0 ? '' : `; ${s.atTheEdge} on the oldest day re-read: older late items may be missed`;
  return `${s.items} late (${spread})${covering}${edge}`;
}
