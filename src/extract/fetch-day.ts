import type { ApiClient } from '../api/api-client.js';
import type { WindowedResource } from '../schemas/resources.js';
import { addDays, type DayString } from './days.js';

export interface LimitPolicy {
  /** First `limit` sent for a day. */
  limit: number;
  /** Largest `limit` a saturated day is asked again with. */
  maxLimit: number;
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
 * Fetches one UTC day of a windowed resource, whatever the server's reading of the spec's gaps:
 * - it asks for startdate=day, enddate=day+1 and keeps the items whose dt is on `day`, so an
 *   inclusive server (two days back) and an exclusive one (one day) both yield the whole day;
 * - order does not matter: the items are a set;
 * - no paging exists, so a response that fills the limit may be cut short: it asks again with a
 *   larger limit up to the ceiling. If the count stops growing although more was asked for, the
 *   server caps responses below our limit.
 * - a day still saturated is asked once more as startdate=enddate=day: an inclusive server then
 *   answers with that day alone (a busy next day no longer crowds it out); an exclusive one
 *   answers nothing and the wide response stands. What stays saturated is reported truncated.
 *   (A day whose dt cannot be read stays in: `onDay` keeps it for validation to reject.)
 */
export async function fetchDay(
  client: ApiClient,
  resource: WindowedResource,
  day: DayString,
  policy: LimitPolicy,
): Promise<FetchedDay> {
  let limit = Math.min(policy.limit, policy.maxLimit);
  let requests = 0;
  let previous: number | undefined;
  let response: unknown[];
  // The count that means "maybe cut short": the limit itself, or the server's own cap.
  let saturation: number;
  for (;;) {
    response = await client.window(resource, { startdate: day, enddate: addDays(day, 1), limit }, { day });
    requests += 1;
    if (previous !== undefined && response.length <= previous) {
      saturation = previous;
      break;
    }
    if (response.length < limit) {
      return { items: onDay(response, day), requestedLimit: limit, truncated: false, requests };
    }
    if (limit >= policy.maxLimit) {
      saturation = limit;
      break;
    }
    previous = response.length;
    limit = Math.min(limit * ESCALATION_FACTOR, policy.maxLimit);
  }
  const narrow = await client.window(resource, { startdate: day, enddate: day, limit }, { day });
  requests += 1;
  // Items of the next day in the wide response prove the server reads enddate inclusively: then
  // the narrow answer is the whole day, even when it is empty.
  const inclusive = onDay(response, day).length < response.length;
  if (narrow.length > 0 || inclusive) {
    return {
      items: onDay(narrow, day),
      requestedLimit: limit,
      truncated: narrow.length >= saturation,
      requests,
    };
  }
  return { items: onDay(response, day), requestedLimit: limit, truncated: true, requests };
}
function onDay(items: unknown[], day: DayString): unknown[] {
  return items.filter((item) => {
    const dt = typeof item === 'object' && item !== null ? (item as { dt?: unknown }).dt : undefined;
    // An item without a readable dt cannot be placed: keep it so validation records it as a reject.
    return typeof dt !== 'string' || !/^\d{4}-\d{2}-\d{2}/.test(dt) || dt.startsWith(day);
  });
}
