import type { Kysely } from 'kysely';
import type pg from 'pg';
import type { Database } from '../db/database.js';
import type { WebhookEventStatus } from '../db/tables/webhook-events.js';
import { reapplyDelivery } from './receive.js';

export interface ReplayFilter {
  /** Deliveries first received at or after this instant. */
  since?: Date;
  status?: WebhookEventStatus;
  source?: string;
}

export interface ReplayResult {
  replayed: number;
  applied: number;
  rejected: number;
  /** Rejected before, applied now (the fix worked). */
  nowApplied: number;
  /** Applied before, rejected by this version's rules (the rows they wrote stay). */
  nowRejected: number;
}

/** Deliveries read per query; each is re-applied in a transaction of its own. */
const PAGE_SIZE = 500;

/**
 * `webhooks replay`: re-applies stored deliveries, oldest first, with this version's rules (after
 * a fix, say). Merging is idempotent, so replaying an applied delivery changes nothing; a
 * rejected one that passes now is applied. Each outcome replaces the stored status.
 */
export async function replayDeliveries(
  pool: pg.Pool,
  db: Kysely<Database>,
  filter: ReplayFilter = {},
): Promise<ReplayResult> {
  const result: ReplayResult = { replayed: 0, applied: 0, rejected: 0, nowApplied: 0, nowRejected: 0 };
  let after = 0;
  for (;;) {
    const page = await db
      .selectFrom('webhook_events')
      .select(['id', 'source_id', 'status', 'body', 'body_text', 'received_at'])
      .where('id', '>', after)
      // A body cleared after the retention (retention.ts) has nothing left to re-apply.
      .where('body_cleared_at', 'is', null)
      .$if(filter.since !== undefined, (qb) => qb.where('received_at', '>=', filter.since as Date))
      .$if(filter.status !== undefined, (qb) => qb.where('status', '=', filter.status as WebhookEventStatus))
      .$if(filter.source !== undefined, (qb) => qb.where('source_id', '=', filter.source as string))
      .orderBy('id')
      .limit(PAGE_SIZE)
      .execute();
    for (const row of page) {
      // body_text holds a body jsonb could not: still unstorable, so it is rejected again.
      const body = row.body_text === null ? row.body : JSON.parse(row.body_text);
      const outcome = await reapplyDelivery(pool, {
        id: row.id,
        sourceId: row.source_id,
        body,
        receivedAt: row.received_at,
      });
      result.replayed += 1;
      result[outcome.status] += 1;
      if (row.status === 'rejected' && outcome.status === 'applied') result.nowApplied += 1;
      if (row.status === 'applied' && outcome.status === 'rejected') result.nowRejected += 1;
    }
    const last = page.at(-1);
    if (last === undefined || page.length < PAGE_SIZE) return result;
    after = last.id;
  }
}
