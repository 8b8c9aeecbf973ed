import type { ApiClient } from '../api/api-client.js';
import type { WindowedResource } from '../schemas/resources.js';
import { addDays, type DayString } from './days.js';

export interface LimitPolicy {
  /** First `limit` sent for a day. */
  limit: number;
  /** Largest `limit` a saturated day is asked again with. */
  maxLimit: number;
}

/**
 * What a run has learned about one source's server: the most items it returns in one response,
 * once seen. Shared by the windows of that source in a run.
 */
export interface ServerCap {
  cap: number | undefined;
}

export interface FetchedDay {
  /** Items whose dt falls on the day (and items whose dt cannot be read: validation rejects them). */
  items: unknown[];
  /** The limit of the last request. */
  requestedLimit: number;
  /** The response may be missing items: it stayed saturated at the ceiling, or the server caps it. */
  truncated: boolean;
  requests: number;
}

/** Each escalation multiplies the limit; few round trips reach any ceiling. */
const ESCALATION_FACTOR = 4;

/**
 * Fetches one UTC day of a windowed resource, whatever the server's reading of the spec's gaps.
 *
 * Bounds: it asks for startdate=day, enddate=day+1 and keeps the items whose dt is on `day`, so
 * an inclusive server (two days back) and an exclusive one (one day) both yield the whole day.
 * When a full response holds items of the next day, the server has proved it reads enddate
 * inclusively, and the day is asked alone (startdate=enddate=day) so a busy next day cannot
 * crowd it out. Order does not matter: the items are a set.
 *
 * No paging exists, so a response that fills the limit may be cut short: the day is asked again
 * with a larger limit up to the ceiling. A server may also cap responses below the limit:
 * - the count stops growing although more was asked for;
 * - or, after an escalation, a count between two limits: a wider request (a neighbouring day
 *   too) that comes back no larger, with items of another day in it, proves the cap;
 * - a cap once proved holds for the rest of the run (`memo`).
 * A day that stays saturated is loaded as far as it came and reported truncated.
 */
export async function fetchDay(
  client: ApiClient,
  resource: WindowedResource,
  day: DayString,
  policy: LimitPolicy,
  memo: ServerCap = { cap: undefined },
): Promise<FetchedDay> {
  let requests = 0;
  const ask = (startdate: DayString, enddate: DayString, limit: number) => {
    requests += 1;
    return client.window(resource, { startdate, enddate, limit }, { day });
  };
  const result = (response: unknown[], requestedLimit: number, truncated: boolean): FetchedDay => ({
    items: onDay(response, day),
    requestedLimit,
    truncated,
    requests,
  });

  let limit = Math.min(policy.limit, policy.maxLimit);
  let alone = false;
  let previous: number | undefined;
  for (;;) {
    const response = await ask(day, alone ? day : addDays(day, 1), limit);
    const count = response.length;
    if (!alone && count >= limit && onDay(response, day).length < count) {
      alone = true;
      previous = undefined;
      continue;
    }
    if (memo.cap !== undefined && count >= memo.cap) return result(response, limit, true);
    if (previous !== undefined && count <= previous) {
      memo.cap = previous;
      return result(response, limit, true);
    }
    if (count < limit) {
      if (previous === undefined || !(await cappedAt(count))) return result(response, limit, false);
      memo.cap = count;
      return result(response, limit, true);
    }
    if (limit >= policy.maxLimit) return result(response, limit, true);
    previous = count;
    limit = Math.min(limit * ESCALATION_FACTOR, policy.maxLimit);
  }

  /**
   * Whether a response of `count` items was the server's cap rather than the whole day: a window
   * that holds the whole day and a neighbour comes back no larger, with the neighbour's items
   * in it. One side first, then the other, as the server's order may hide one neighbour. With
   * both neighbours empty the two cannot be told apart and the day counts as whole.
   */
  async function cappedAt(count: number): Promise<boolean> {
    for (const [from, to] of [
      [addDays(day, -1), addDays(day, 1)],
      [day, addDays(day, 2)],
    ] as const) {
      const wider = await ask(from, to, limit);
      if (wider.length > count) return false;
      if (onDay(wider, day).length < wider.length) return true;
    }
    return false;
  }
}

function onDay(items: unknown[], day: DayString): unknown[] {
  return items.filter((item) => {
    const dt = typeof item === 'object' && item !== null ? (item as { dt?: unknown }).dt : undefined;
    // An item without a readable dt cannot be placed: keep it so validation records it as a reject.
    return typeof dt !== 'string' || !/^\d{4}-\d{2}-\d{2}/.test(dt) || dt.startsWith(day);
  });
}
