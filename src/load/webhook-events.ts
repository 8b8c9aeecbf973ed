import { CompiledQuery, sql } from 'kysely';
import type { WebhookEventStatus } from '../db/tables/webhook-events.js';
import { type LoadTransaction, preparedStatement } from '../db/transaction.js';

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

/** A delivery of `copies` copies, and the visitor it names when it is to be kept unless forgotten. */
export interface BatchedDeliveryRecord extends DeliveryRecord {
  copies: number;
  /**
   * The body's visitor id as stored (text PostgreSQL can take): the delivery is not stored when
   * the source's suppression list holds it. Null: stored whatever the list says.
   */
  unlessSuppressed: string | null;
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
  const [stored] = await recordDeliveries(trx, [{ ...record, copies: 1, unlessSuppressed: null }]);
  if (stored === undefined) throw new Error('a stored delivery was not returned');
  return stored;
}

/**
 * The insert of recordDeliveries, reading its rows from `parameter` (receive_webhook_batch(),
 * migration 0042, holds a copy of it for the receiver's usual batch). The rows travel as ONE jsonb parameter (a JSON array) read by jsonb_to_recordset. A VALUES
 * list with a parameter per column and row made PostgreSQL parse and plan a new statement of up
 * to 2,000 parameters per batch, and Kysely build and compile it, every batch anew.
 * A storable body travels as itself inside a one-element array (`body -> 0`: a body that is JSON
 * null stays the jsonb null, not SQL NULL); an unstorable one as its JSON text, a string.
 */
function recordDeliveriesQuery(parameter: string): string {
  return `
  insert into webhook_events as e
    (source_id, body_hash, type, status, error, body, body_text, delivery_count, applied_at)
  select r.source_id, r.body_hash, r.type, r.status, r.error, r.body -> 0, r.body_text, r.copies,
         case when r.status = 'applied' then now() end
  from jsonb_to_recordset(${parameter}::jsonb) as r(source_id text, body_hash text, type text,
                                          status text, error text, body jsonb, body_text text,
                                          copies integer, visitor_id text)
  -- The suppression list (src/privacy/suppression.ts) read in this statement: the caller took the
  -- writers' shared lock in the one before, so a forget committed meanwhile is seen.
  where r.visitor_id is null
     or not exists (select 1 from suppressed_visitors s
                    where s.source_id = r.source_id and s.visitor_id = r.visitor_id)
  -- Key order: concurrent batches lock rows in one order and cannot deadlock.
  order by r.source_id collate "C", r.body_hash collate "C"
  on conflict (source_id, body_hash) do update set
    delivery_count = e.delivery_count + excluded.delivery_count,
    last_received_at = now()
  returning id, status, error, source_id, body_hash, (xmax = 0) as inserted`;
}

/** One statement, the same text whatever the number of deliveries. */
const RECORD_DELIVERIES = preparedStatement(recordDeliveriesQuery('$1'));

/** A row of webhook_events as recordDeliveriesQuery returns it. */
export interface RecordedRow {
  id: number | string;
  status: WebhookEventStatus;
  error: string | null;
  source_id: string;
  body_hash: string;
  inserted: boolean;
}

/** The parameter of recordDeliveriesQuery: the records as one JSON array. */
export function deliveriesParameter(records: readonly BatchedDeliveryRecord[]): string {
  return JSON.stringify(
    records.map((record) => ({
      source_id: record.sourceId,
      body_hash: record.bodyHash,
      type: record.type,
      status: record.status,
      error: record.error,
      ...(record.storable ? { body: [record.body] } : { body_text: JSON.stringify(record.body) }),
      copies: record.copies,
      visitor_id: record.unlessSuppressed,
    })),
  );
}

/** recordDeliveriesQuery's rows for `records`, in their order; undefined for one suppressed. */
export function storedDeliveries(
  records: readonly BatchedDeliveryRecord[],
  rows: readonly RecordedRow[],
): (StoredDelivery | undefined)[] {
  const keyOf = (sourceId: string, bodyHash: string) => `${sourceId}\u0000${bodyHash}`;
  const byKey = new Map(
    rows.map((row) => [
      keyOf(row.source_id, row.body_hash),
      { id: Number(row.id), status: row.status, error: row.error, inserted: row.inserted },
    ]),
  );
  return records.map((record) => {
    const stored = byKey.get(keyOf(record.sourceId, record.bodyHash));
    if (stored === undefined && record.unlessSuppressed === null)
      throw new Error('a stored delivery was not returned');
    return stored;
  });
}

/**
 * recordDelivery for many distinct bodies in one statement (the webhook receiver's
 * micro-batches): `copies` deliveries of each, counted at once. Rows are written in key order,
 * so concurrent batches lock them in one order and cannot deadlock. Results in input order;
 * undefined for a delivery not stored because its visitor is on the suppression list (call
 * shareSuppressionLock first, in the same transaction, when any record names one).
 */
export async function recordDeliveries(
  trx: LoadTransaction,
  records: readonly BatchedDeliveryRecord[],
): Promise<(StoredDelivery | undefined)[]> {
  if (records.length === 0) return [];
  const result = await trx.db.executeQuery<RecordedRow>(
    CompiledQuery.raw(RECORD_DELIVERIES, [deliveriesParameter(records)]),
  );
  return storedDeliveries(records, result.rows);
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
