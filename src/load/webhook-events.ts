import { sql } from 'kysely';
import type { WebhookEventStatus } from '../db/tables/webhook-events.js';
import type { LoadTransaction } from '../db/transaction.js';

/** One delivery as it is to be stored (see migration 0002 for the columns). */
export interface DeliveryRecord {
  sourceId: string;
  bodyHash: string;
  type: string | null;
  status: WebhookEventStatus;
  error: string | null;
  /** The parsed body: stored as jsonb, or as JSON text when `storable` is false. */
  body: unknown;
  /** False when a string of the body holds U+0000 or an unpaired surrogate (jsonb refuses those). */
  storable: boolean;
}

export interface StoredDelivery {
  id: number;
  /** The stored status: this delivery's own when it is new, the first copy's when it is a redelivery. */
  status: WebhookEventStatus;
  error: string | null;
  /** False for a redelivery of a body already stored. */
  inserted: boolean;
}

/**
 * Stores a delivery once per source and body: a redelivery of the same body adds no row, it
 * counts one more delivery on the stored one and returns it. A concurrent copy waits on the
 * unique key until the first commits, then takes this path too.
 */
export async function recordDelivery(trx: LoadTransaction, record: DeliveryRecord): Promise<StoredDelivery> {
  const [stored] = await recordDeliveries(trx, [{ ...record, copies: 1 }]);
  return stored as StoredDelivery;
}

/**
 * recordDelivery for many distinct bodies in one statement (the webhook receiver's
 * micro-batches): `copies` deliveries of each, counted at once. Rows are written in key order,
 * so concurrent batches lock them in one order and cannot deadlock. Results in input order.
 */
export async function recordDeliveries(
  trx: LoadTransaction,
  records: readonly (DeliveryRecord & { copies: number })[],
): Promise<StoredDelivery[]> {
  if (records.length === 0) return [];
  const keyOf = (sourceId: string, bodyHash: string) => `${sourceId}\u0000${bodyHash}`;
  const ordered = [...records].sort((a, b) => {
    const x = keyOf(a.sourceId, a.bodyHash);
    const y = keyOf(b.sourceId, b.bodyHash);
    return x < y ? -1 : x > y ? 1 : 0;
  });
  const rows = await trx.db
    .insertInto('webhook_events')
    .values(
      ordered.map((record) => {
        const json = JSON.stringify(record.body);
        return {
          source_id: record.sourceId,
          body_hash: record.bodyHash,
          type: record.type,
          status: record.status,
          error: record.error,
          body: record.storable ? json : null,
          body_text: record.storable ? null : json,
          delivery_count: record.copies,
          applied_at: record.status === 'applied' ? sql<Date>`now()` : null,
        };
      }),
    )
    .onConflict((oc) =>
      oc.columns(['source_id', 'body_hash']).doUpdateSet({
        delivery_count: sql<number>`webhook_events.delivery_count + excluded.delivery_count`,
        last_received_at: sql<Date>`now()`,
      }),
    )
    .returning(['id', 'status', 'error', 'source_id', 'body_hash', sql<boolean>`xmax = 0`.as('inserted')])
    .execute();
  const byKey = new Map(
    rows.map((row) => [
      keyOf(row.source_id, row.body_hash),
      { id: row.id, status: row.status, error: row.error, inserted: row.inserted },
    ]),
  );
  return records.map((record) => {
    const stored = byKey.get(keyOf(record.sourceId, record.bodyHash));
    if (stored === undefined) throw new Error('a stored delivery was not returned');
    return stored;
  });
}

/** Sets a stored delivery's outcome (a redelivery or a replay that decided differently). */
export async function setDeliveryOutcome(
  trx: LoadTransaction,
  id: number,
  outcome: { status: WebhookEventStatus; error: string | null },
): Promise<void> {
  await trx.db
    .updateTable('webhook_events')
    .set({
      status: outcome.status,
      error: outcome.error,
      ...(outcome.status === 'applied' ? { applied_at: sql<Date>`now()` } : {}),
    })
    .where('id', '=', id)
    // Replaying an outcome that did not change writes nothing.
    .where(sql<boolean>`(status, error) is distinct from (${outcome.status}, ${outcome.error}::text)`)
    .execute();
}
