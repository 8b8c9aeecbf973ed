import { canonicalJson, contentHash } from '../db/canonical-json.js';
import type { LoadTransaction } from '../db/transaction.js';
import type { Rejected } from '../schemas/rejected.js';
import { storableCopy, storableText } from '../schemas/storable.js';

const REJECTS_PER_STATEMENT = 1000;

export interface RejectContext {
  sourceId: string;
  resource: string;
  day: string | null;
  runId: number | null;
}

/**
 * Stores each invalid item verbatim with its error, once: a re-run adds no duplicate.
 *
 * "Verbatim" as far as PostgreSQL allows: an item rejected for holding U+0000, an unpaired
 * surrogate or too deep a nesting (src/schemas/storable.ts) cannot go into jsonb as it came, and
 * a reject that cannot be stored would fail the day it was meant to spare. Its stored copy
 * shows those characters as U+FFFD and cuts the nesting, and its error says so.
 */
export async function loadRejects(
  trx: LoadTransaction,
  context: RejectContext,
  rejected: readonly Rejected[],
): Promise<number> {
  if (rejected.length === 0) return 0;
  const rows = new Map<string, { item: string; error: string }>();
  for (const reject of rejected) {
    const copy = storableCopy(reject.item);
    const error = storableText(reject.error);
    rows.set(contentHash(copy.value), {
      item: canonicalJson(copy.value ?? null),
      error: copy.notes.length === 0 ? error : `${error} (stored copy: ${copy.notes.join('; ')})`,
    });
  }
  // In hash order: windows that meet the same reject (an item of a neighbour day) lock its row in
  // one order, so they wait for each other instead of deadlocking.
  const values = [...rows]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([hash, row]) => ({
      source_id: context.sourceId,
      resource: context.resource,
      item_hash: hash,
      day: context.day,
      item: row.item,
      error: row.error,
      run_id: context.runId,
    }));
  let inserted = 0;
  // A statement takes at most 65535 parameters, 7 per row: a broken day of 10,000 items would
  // not fit in one.
  for (let start = 0; start < values.length; start += REJECTS_PER_STATEMENT) {
    const result = await trx.db
      .insertInto('rejects')
      .values(values.slice(start, start + REJECTS_PER_STATEMENT))
      .onConflict((oc) => oc.columns(['source_id', 'resource', 'item_hash']).doNothing())
      .executeTakeFirst();
    inserted += Number(result.numInsertedOrUpdatedRows ?? 0);
  }
  return inserted;
}
