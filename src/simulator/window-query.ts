import type { WindowedResource } from '../schemas/resources.js';
import type { Dataset } from './dataset.js';
import type { DayItems } from './day-data.js';
import { addDays, dayRange, isDay, maxDay, minDay } from './days.js';
import type { ServingSettings } from './settings.js';

/** startdate, enddate and limit of a windowed request (spec 4); each may be absent. */
export interface WindowQuery {
  startdate?: string;
  enddate?: string;
  limit?: number;
}

export type WindowQueryResult = { ok: true; query: WindowQuery } | { ok: false; message: string };

export function parseWindowQuery(raw: unknown): WindowQueryResult {
  const params = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>;
  const query: WindowQuery = {};
  for (const name of ['startdate', 'enddate'] as const) {
    const value = params[name];
    if (value === undefined) continue;
    if (typeof value !== 'string' || !isDay(value)) {
      return { ok: false, message: `${name} must be a date YYYY-MM-DD, given once` };
    }
    query[name] = value;
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

type Settings = Pick<ServingSettings, 'enddate' | 'order' | 'cap'>;

/**
 * The items a windowed request returns: days from startdate through enddate (enddate's own day
 * only in 'inclusive' mode; an absent bound means the edge of the data), ordered by dt, then cut
 * to min(limit, cap). Days are visited in order and the walk stops once enough items are taken,
 * so a capped request over a long range does not generate every day.
 */
export function selectWindow<R extends WindowedResource>(
  dataset: Dataset,
  resource: R,
  query: WindowQuery,
  settings: Settings,
): Array<DayItems[R][number]> {
  const first = maxDay(query.startdate ?? dataset.from, dataset.from);
  const requestedLast =
    query.enddate === undefined
      ? dataset.to
      : settings.enddate === 'inclusive'
        ? query.enddate
        : addDays(query.enddate, -1);
  const last = minDay(requestedLast, dataset.to);
  if (first > last) return [];

  const wanted = Math.min(query.limit ?? settings.cap, settings.cap);
  const newestFirst = settings.order === 'newest-first';
  const days = dayRange(first, last);
  if (newestFirst) days.reverse();
  const selected: Array<DayItems[R][number]> = [];
  for (const day of days) {
    const items = dataset.day(day)[resource] as Array<DayItems[R][number]>;
    const ordered = newestFirst ? [...items].reverse() : items;
    for (const item of ordered) {
      if (selected.length >= wanted) return selected;
      selected.push(item);
    }
  }
  return selected;
}
