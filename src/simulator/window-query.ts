import type { WindowedResource } from '../schemas/resources.js';
import { addDays, DAY_MS, dayStartMs, daysFrom, isDay, maxDay, minDay } from '../time/days.js';
import type { DayItems } from './day-data.js';
import type { Random } from './random.js';
import { randomSample } from './random-order.js';
import { serverDaySpan, utcDayOf } from './server-days.js';
import { capOf, type ServingSettings } from './settings.js';

/** startdate, enddate and limit of a windowed request (spec 4); each may be absent. */
export interface WindowQuery {
  /** A day, or the date of an instant when instants are 'ignored'. */
  startdate?: string;
  enddate?: string;
  /** An instant in startdate, when instants are 'honoured': epoch milliseconds. */
  startAt?: number;
  endAt?: number;
  limit?: number;
}

export type WindowQueryResult = { ok: true; query: WindowQuery } | { ok: false; message: string };

/** `YYYY-MM-DDThh:mm:ss.sssZ`, as the real service's own client sends it. */
const INSTANT_SHAPE = /^(\d{4}-\d{2}-\d{2})T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

export function parseWindowQuery(
  raw: unknown,
  instants: ServingSettings['instants'] = 'refused',
): WindowQueryResult {
  const params = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>;
  const query: WindowQuery = {};
  for (const name of ['startdate', 'enddate'] as const) {
    const value = params[name];
    if (value === undefined) continue;
    if (typeof value === 'string' && isDay(value)) {
      query[name] = value;
      continue;
    }
    const date = typeof value === 'string' ? INSTANT_SHAPE.exec(value)?.[1] : undefined;
    if (
      instants === 'refused' ||
      date === undefined ||
      !isDay(date) ||
      Number.isNaN(Date.parse(value as string))
    )
      return { ok: false, message: `${name} must be a date YYYY-MM-DD, given once` };
    if (instants === 'ignored') query[name] = date;
    else query[name === 'startdate' ? 'startAt' : 'endAt'] = Date.parse(value as string);
  }
  const limit = params.limit;
  if (limit !== undefined) {
    if (typeof limit !== 'string' || !/^\d{1,9}$/.test(limit) || Number(limit) < 1) {
      return { ok: false, message: 'limit must be a positive integer' };
    }
    query.limit = Number(limit);
  }
  return { ok: true, query };
}

/** Where a window's items come from: the UTC days with data and each day's items as served. */
export interface WindowSource {
  readonly from: string;
  readonly to: string;
  day(day: string): DayItems;
}

type Settings = Pick<
  ServingSettings,
  'startdate' | 'enddate' | 'order' | 'cap' | 'caps' | 'dayOffsetMinutes' | 'dayZone' | 'defaultLimit'
>;

type Item<R extends WindowedResource> = DayItems[R][number];

/**
 * The items a windowed request returns: the server days from startdate through enddate (each
 * bound's own day only when that bound is 'inclusive'; an absent bound is the edge of the data;
 * an honoured instant bounds by itself), ordered, then cut to min(limit, cap of the resource). The cut comes after ordering, so a capped
 * newest-first request gets the newest items. For oldest- and newest-first the walk stops once
 * enough items are taken, so a capped request over a long range does not generate every day;
 * 'random' streams every day of the window through a bounded sample. `shuffle` is required for
 * 'random' (the caller owns the per-request seed).
 */
export function selectWindow<R extends WindowedResource>(
  source: WindowSource,
  resource: R,
  query: WindowQuery,
  settings: Settings,
  shuffle?: Random,
): Array<Item<R>> {
  const { startMs, endMs } = spanOf(query, settings);
  if (startMs >= endMs) return [];
  // The UTC days whose items can fall in the span; items outside from..to do not exist.
  const firstUtc =
    startMs === Number.NEGATIVE_INFINITY ? source.from : maxDay(utcDayOf(startMs), source.from);
  const lastUtc = endMs === Number.POSITIVE_INFINITY ? source.to : minDay(utcDayOf(endMs - 1), source.to);
  if (firstUtc > lastUtc) return [];

  const cap = capOf(settings, resource);
  const wanted = Math.min(query.limit ?? settings.defaultLimit ?? cap, cap);
  const days = daysFrom(firstUtc, lastUtc);
  const itemsOf = (day: string): ReadonlyArray<Item<R>> => {
    const items = source.day(day)[resource] as ReadonlyArray<Item<R>>;
    const start = dayStartMs(day);
    // Only a day cut by the span (a non-UTC server day) needs its items' times looked at.
    if (start >= startMs && start + DAY_MS <= endMs) return items;
    return items.filter((item) => {
      const at = Date.parse(item.dt);
      return at >= startMs && at < endMs;
    });
  };

  if (settings.order === 'random') {
    if (!shuffle) throw new Error("selectWindow needs a shuffle for order 'random'");
    return randomSample(streamDays(days, itemsOf), wanted, shuffle);
  }
  const newestFirst = settings.order === 'newest-first';
  if (newestFirst) days.reverse();
  const selected: Array<Item<R>> = [];
  for (const day of days) {
    const items = itemsOf(day);
    const ordered = newestFirst ? [...items].reverse() : items;
    for (const item of ordered) {
      if (selected.length >= wanted) return selected;
      selected.push(item);
    }
  }
  return selected;
}

/**
 * The instants [startMs, endMs) a query serves: server days from its day bounds (each bound's own
 * day only when 'inclusive'), or its instants with the same inclusivity at them; an absent bound
 * is open.
 */
function spanOf(
  query: WindowQuery,
  settings: Pick<Settings, 'startdate' | 'enddate' | 'dayOffsetMinutes' | 'dayZone'>,
): { startMs: number; endMs: number } {
  const first =
    query.startdate === undefined
      ? undefined
      : settings.startdate === 'inclusive'
        ? query.startdate
        : addDays(query.startdate, 1);
  const last =
    query.enddate === undefined
      ? undefined
      : settings.enddate === 'inclusive'
        ? query.enddate
        : addDays(query.enddate, -1);
  const days = serverDaySpan(first, last, settings);
  return {
    startMs:
      query.startAt === undefined
        ? days.startMs
        : query.startAt + (settings.startdate === 'inclusive' ? 0 : 1),
    endMs: query.endAt === undefined ? days.endMs : query.endAt + (settings.enddate === 'inclusive' ? 1 : 0),
  };
}

function* streamDays<T>(days: readonly string[], itemsOf: (day: string) => ReadonlyArray<T>): Generator<T> {
  for (const day of days) yield* itemsOf(day);
}
