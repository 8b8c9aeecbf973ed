import type pg from 'pg';
import { inOneStatement, preparedStatement } from '../db/transaction.js';
import {
  type BatchedDeliveryRecord,
  deliveriesParameter,
  type RecordedRow,
  type StoredDelivery,
  storedDeliveries,
} from './webhook-events.js';
import {
  finishWebhookMerge,
  type PlannedMerge,
  type WebhookMerge,
  type WrittenRow,
} from './webhook-items.js';

/**
 * The webhook receiver's batch as ONE statement, its own transaction: receive_webhook_batch()
 * (migration 0042) stores the deliveries as recordDeliveries does and, when every valid one is
 * new, merges their rows as mergeWebhookBodies does. No BEGIN, no COMMIT, no separate lock: one
 * round trip where a transaction took three, and on a busy machine each round trip waits for
 * both processes to be scheduled. The rows travel as four JSON arrays, so the text never changes
 * and each connection prepares it once.
 */
const RECEIVE_BATCH = preparedStatement(`
  select written_table as "table", source_id, id, key2, inserted, status, error, body_hash
  from receive_webhook_batch($1::jsonb, $2::jsonb, $3::jsonb, $4::jsonb)`);

/** The function's SQLSTATE when a valid delivery was not new: nothing of the batch was stored. */
const NOT_ALL_NEW = 'IWB01';

/** What the function wrote: the deliveries' rows, then the merge's. */
type BatchRow = (RecordedRow & { table: 'written_events'; key2: null }) | (WrittenRow & { body_hash: null });

/**
 * Stores `records` and merges `planned` (planWebhookMerge of every valid record, in their order;
 * undefined when none is valid) in one statement, committed when this resolves. Undefined when a
 * valid delivery was a redelivery or of a forgotten visitor: then nothing was stored, and the
 * caller stores the batch in a transaction that merges only what needs it.
 */
export async function storeNewDeliveries(
  pool: pg.Pool,
  records: readonly BatchedDeliveryRecord[],
  planned: PlannedMerge | undefined,
): Promise<{ recorded: (StoredDelivery | undefined)[]; merged: WebhookMerge[] } | undefined> {
  let rows: BatchRow[];
  try {
    rows = await inOneStatement<BatchRow>(pool, RECEIVE_BATCH, [
      deliveriesParameter(records),
      ...(planned?.parameters ?? ['[]', '[]', '[]']),
    ]);
  } catch (error) {
    if ((error as { code?: unknown } | null)?.code === NOT_ALL_NEW) return undefined;
    throw error;
  }
  const events: RecordedRow[] = [];
  const written: WrittenRow[] = [];
  for (const row of rows) {
    if (row.table === 'written_events') events.push(row);
    else written.push(row);
  }
  return {
    recorded: storedDeliveries(records, events),
    merged: planned === undefined ? [] : finishWebhookMerge(planned, written),
  };
}
