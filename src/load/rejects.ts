import type { Rejected } from '../extract/validate.js';
import { canonicalJson, contentHash } from './canonical-json.js';
import type { LoadTransaction } from './transaction.js';

export interface RejectContext {
  sourceId: string;
  resource: string;
  day: string | null;
  runId: number | null;
}

/** Stores each invalid item verbatim with its error, once: a re-run adds no duplicate. */
export async function loadRejects(
  trx: LoadTransaction,
  context: RejectContext,
  rejected: readonly Rejected[],
): Promise<number> {
  if (rejected.length === 0) return 0;
  const rows = new Map<string, { item: string; error: string }>();
  for (const reject of rejected) {
    rows.set(contentHash(reject.item), { item: canonicalJson(reject.item ?? null), error: reject.error });
  }
  const result = await trx.db
    .insertInto('rejects')
    .values(
      [...rows].map(([hash, row]) => ({
        source_id: context.sourceId,
        resource: context.resource,
        item_hash: hash,
        day: context.day,
        item: row.item,
        error: row.error,
        run_id: context.runId,
      })),
    )
    .onConflict((oc) => oc.columns(['source_id', 'resource', 'item_hash']).doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0);
}
