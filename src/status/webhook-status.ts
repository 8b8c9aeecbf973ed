import { type Kysely, sql } from 'kysely';
import type { Database } from '../db/database.js';
import type { DayString } from '../time/days.js';

/** The webhook part of `status`, per source that has received a delivery or holds a webhook-only row. */
export interface WebhookSourceStatus {
  source: string;
  /** Distinct deliveries first received today (UTC); redeliveries of a body are not counted again. */
  receivedToday: number;
  /** Stored deliveries whose status is rejected (see their `error`; `webhooks replay` after a fix). */
  rejected: number;
  /** Feedback and survey rows only a webhook has delivered so far (origin 'webhook'). */
  provisional: number;
  /**
   * The reconciliation report: provisional rows delivered more than `confirmDays` days ago, which
   * the API sync has not confirmed (a day the API truncates, or an item the API does not return);
   * per resource in unconfirmed-webhooks.ts.
   */
  unconfirmed: number;
  /** When the oldest unconfirmed row was delivered (webhook_received_at). */
  oldestUnconfirmed: string | null;
}

export interface WebhookStatusOptions {
  today: DayString;
  now: Date;
  confirmDays: number;
}

export async function webhookStatus(
  db: Kysely<Database>,
  options: WebhookStatusOptions,
): Promise<WebhookSourceStatus[]> {
  const todayStart = new Date(`${options.today}T00:00:00.000Z`);
  const cutoff = new Date(options.now.getTime() - options.confirmDays * 86_400_000);
  const deliveries = await sql<{ source_id: string; received_today: number; rejected: number }>`
    select source_id,
           count(*) filter (where received_at >= ${todayStart})::int as received_today,
           count(*) filter (where status = 'rejected')::int as rejected
    from webhook_events group by source_id`.execute(db);
  const rows = await sql<{
    source_id: string;
    provisional: number;
    unconfirmed: number;
    oldest: Date | null;
  }>`
    select source_id,
           count(*)::int as provisional,
           count(*) filter (where received < ${cutoff})::int as unconfirmed,
           min(received) filter (where received < ${cutoff}) as oldest
    from (select source_id, coalesce(webhook_received_at, first_seen_at) as received
            from feedback where origin = 'webhook'
          union all
          select source_id, coalesce(webhook_received_at, first_seen_at)
            from survey_answers where origin = 'webhook') provisional
    group by source_id`.execute(db);
  const sources = [...new Set([...deliveries.rows, ...rows.rows].map((r) => r.source_id))].sort();
  return sources.map((source) => {
    const delivered = deliveries.rows.find((r) => r.source_id === source);
    const held = rows.rows.find((r) => r.source_id === source);
    return {
      source,
      receivedToday: delivered?.received_today ?? 0,
      rejected: delivered?.rejected ?? 0,
      provisional: held?.provisional ?? 0,
      unconfirmed: held?.unconfirmed ?? 0,
      oldestUnconfirmed: held?.oldest?.toISOString() ?? null,
    };
  });
}
