import { sql } from 'kysely';
import { canonicalJson, contentHash } from '../db/canonical-json.js';
import type { LoadTransaction } from '../db/transaction.js';
import type { Rejected } from '../schemas/rejected.js';
import { storableCopy, storableText } from '../schemas/storable.js';
import { rejectedKey } from './superseded-rows.js';
import type { CheckedUpsertSpec } from './upsert.js';

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
  const ordered = storableRejects(rejected);
  // Three arrays, one statement whatever the count: a broken day of 10,000 items as a list of
  // tuples would take 70,000 parameters, past PostgreSQL's 65,535.
  const result = await sql`
    insert into rejects (source_id, resource, item_hash, day, item, error, run_id)
    select ${context.sourceId}, ${context.resource}, r.item_hash, ${context.day}::date, r.item::jsonb, r.error,
           ${context.runId}::bigint
      from unnest(${ordered.map(([hash]) => hash)}::text[], ${ordered.map(([, row]) => canonicalJson(row.item))}::text[],
                  ${ordered.map(([, row]) => row.error)}::text[]) with ordinality as r(item_hash, item, error, n)
     order by r.n
    on conflict (source_id, resource, item_hash) do nothing`.execute(trx.db);
  const inserted = Number(result.numAffectedRows ?? 0);
  return inserted;
}

/**
 * Each reject's stored copy and error, once per content hash, in hash order: windows that meet
 * the same reject (an item of a neighbour day) lock its row in one order, so they wait for each
 * other instead of deadlocking.
 */
function storableRejects(
  rejected: readonly Rejected[],
): [string, { item: unknown; error: string; source: Rejected }][] {
  const rows = new Map<string, { item: unknown; error: string; source: Rejected }>();
  for (const reject of rejected) {
    const copy = storableCopy(reject.item);
    const error = storableText(reject.error);
    rows.set(contentHash(copy.value), {
      item: copy.value ?? null,
      error: copy.notes.length === 0 ? error : `${error} (stored copy: ${copy.notes.join('; ')})`,
      source: reject,
    });
  }
  return [...rows].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/** The visitor id a rejected item names, if it names one as a string. */
export function rejectedVisitor(reject: Rejected): string | undefined {
  const visitor = (reject.item as { visitor?: { id?: unknown } } | null)?.visitor;
  return typeof visitor?.id === 'string' ? visitor.id : undefined;
}

/**
 * A window's rejects as store_window() takes them (migration 0041): one JSON array, in hash order,
 * each with its content hash, stored copy, error, the visitor it names (for the suppression
 * list) and the key it names (for the rows it supersedes, src/load/superseded-rows.ts). Null for
 * none.
 */
export function rejectsParameter(spec: CheckedUpsertSpec, rejected: readonly Rejected[]): string | null {
  if (rejected.length === 0) return null;
  return JSON.stringify(
    storableRejects(rejected).map(([hash, row]) => {
      const visitor = rejectedVisitor(row.source);
      const key = rejectedKey(spec, row.source);
      return {
        hash,
        item: row.item,
        error: row.error,
        // An id PostgreSQL could not hold as text is on no suppression list.
        ...(visitor !== undefined && storableText(visitor) === visitor ? { visitor } : {}),
        ...(key !== undefined ? { key } : {}),
      };
    }),
  );
}
