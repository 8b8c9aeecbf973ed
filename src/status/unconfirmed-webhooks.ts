import { type Kysely, sql } from 'kysely';
import type { Database } from '../db/database.js';
import type { DayString } from '../time/days.js';

/**
 * Webhooks held against the API, the authority. A webhook announces an item the service received;
 * the nightly sync reads that item's day and its lookback, and should serve it. Two findings say
 * it did not:
 * - a webhook-only row (origin 'webhook': a delivery brought it, no read of the API has served it)
 *   whose delivery is older than a cut-off: the delivery the API never confirms, or an API that
 *   drops what its webhook announced;
 * - a day whose distinct deliveries outnumber the items the API served for it.
 * Both are read here, for `status` and for any command that re-reads days (verify): the rows
 * themselves say it all, nothing else is recorded.
 */

export type WebhookResource = 'feedback' | 'survey';

/** Webhook-only rows of one source and resource whose delivery is older than the cut-off. */
export interface UnconfirmedWebhookItems {
  source: string;
  resource: WebhookResource;
  count: number;
  /** When the oldest of them was delivered (ISO). */
  oldestReceivedAt: string;
  /**
   * The UTC days their deliveries were received, oldest first: the days to read again. A webhook
   * carries no time of its item (spec 6); the service sends it when the item is received, so the
   * item's own day is the receipt's (or the one before, near midnight).
   */
  days: DayString[];
}

export interface UnconfirmedWebhookQuery {
  /** One source only; default every source. */
  sourceId?: string;
  /** Rows delivered before this instant count: now minus INSIGHTS_WEBHOOK_CONFIRM_DAYS. */
  olderThan: Date;
}

/**
 * Webhook-only rows delivered before `olderThan`, per source and resource. A row's delivery is
 * webhook_received_at (kept when the API completes the row; a replayed delivery keeps its first
 * receipt), first_seen_at for a row written without one.
 */
export async function unconfirmedWebhookItems(
  db: Kysely<Database>,
  query: UnconfirmedWebhookQuery,
): Promise<UnconfirmedWebhookItems[]> {
  const source = query.sourceId ?? null;
  const rows = await sql<{
    source_id: string;
    resource: WebhookResource;
    count: number;
    oldest: Date;
    days: string[];
  }>`
    select source_id, resource, count(*)::int as count, min(received) as oldest,
           array_agg(distinct (received at time zone 'UTC')::date::text order by (received at time zone 'UTC')::date::text) as days
    from (select source_id, 'feedback' as resource, coalesce(webhook_received_at, first_seen_at) as received
            from feedback where origin = 'webhook'
          union all
          select source_id, 'survey', coalesce(webhook_received_at, first_seen_at)
            from survey_answers where origin = 'webhook') provisional
    where received < ${query.olderThan} and (${source}::text is null or source_id = ${source})
    group by source_id, resource
    order by source_id, resource`.execute(db);
  return rows.rows.map((r) => ({
    source: r.source_id,
    resource: r.resource,
    count: r.count,
    oldestReceivedAt: r.oldest.toISOString(),
    days: r.days,
  }));
}

/** A UTC day whose webhook deliveries outnumber the items the API served for it. */
export interface OutnumberedDay {
  source: string;
  resource: WebhookResource;
  day: DayString;
  /** Distinct items announced by deliveries received that day (applied; a redelivery counts once). */
  deliveries: number;
  /** Rows of the day the API served (origin 'api' or 'both', dt on the day). */
  apiItems: number;
}

/**
 * Days, wholly before `olderThan`, whose applied deliveries name more distinct items than the API
 * served with a dt on that day. A delivery near midnight may announce an item of the day before,
 * so a day off by one is possible: the finding is a day to read again, not a verdict.
 */
export async function webhookOutnumberedDays(
  db: Kysely<Database>,
  query: UnconfirmedWebhookQuery,
): Promise<OutnumberedDay[]> {
  const source = query.sourceId ?? null;
  // An item is its key; a body cleared after the retention is told apart by its hash.
  const rows = await sql<{
    source_id: string;
    resource: WebhookResource;
    day: string;
    deliveries: number;
    api_items: number;
  }>`
    with delivered as (
      select source_id, type as resource, (received_at at time zone 'UTC')::date as day,
             count(distinct coalesce(
               (body ->> 'id') || '/' || coalesce(body ->> 'feedback_id', body ->> 'question_id'),
               body_hash))::int as deliveries
      from webhook_events
      where status = 'applied' and type in ('feedback', 'survey')
        and (received_at at time zone 'UTC')::date < (${query.olderThan}::timestamptz at time zone 'UTC')::date
        and (${source}::text is null or source_id = ${source})
      group by 1, 2, 3)
    select d.source_id, d.resource, d.day::text as day, d.deliveries, served.n as api_items
    from delivered d
    cross join lateral (
      select count(*)::int as n from (
        select 1 from feedback f
         where d.resource = 'feedback' and f.source_id = d.source_id and f.origin <> 'webhook'
           and f.dt >= d.day::timestamp at time zone 'UTC' and f.dt < (d.day + 1)::timestamp at time zone 'UTC'
        union all
        select 1 from survey_answers s
         where d.resource = 'survey' and s.source_id = d.source_id and s.origin <> 'webhook'
           and s.dt >= d.day::timestamp at time zone 'UTC' and s.dt < (d.day + 1)::timestamp at time zone 'UTC'
      ) items) served
    where d.deliveries > served.n
    order by d.source_id, d.resource, d.day`.execute(db);
  return rows.rows.map((r) => ({
    source: r.source_id,
    resource: r.resource,
    day: r.day,
    deliveries: r.deliveries,
    apiItems: r.api_items,
  }));
}
