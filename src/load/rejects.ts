import { sql } from 'kysely';
import { canonicalJson, contentHash } from '../db/canonical-json.js';
import type { LoadTransaction } from '../db/transaction.js';
import type { Rejected } from '../schemas/rejected.js';
import { storableCopy, storableText } from '../schemas/storable.js';

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
  const ordered = [...rows].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  // Three arrays, one statement whatever the count: a broken day of 10,000 items as a list of
  // tuples would take 70,000 parameters, past PostgreSQL's 65,535.
  const result = await sql`
    insert into rejects (source_id, resource, item_hash, day, item, error, run_id)
    select ${context.sourceId}, ${context.resource}, r.item_hash, ${context.day}::date, r.item::jsonb, r.error,
           ${context.runId}::bigint
      from unnest(${ordered.map(([hash]) => hash)}::text[], ${ordered.map(([, row]) => row.item)}::text[],
                  ${ordered.map(([, row]) => row.error)}::text[]) with ordinality as r(item_hash, item, error, n)
     order by r.n
    on conflict (source_id, resource, item_hash) do nothing`.execute(trx.db);
  const inserted = Number(result.numAffectedRows ?? 0);
  return inserted;
}
