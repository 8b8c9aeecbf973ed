import { sql } from 'kysely';
import type { LoadTransaction } from '../db/transaction.js';
import type { Rejected } from '../schemas/rejected.js';
import { addDays, type DayString } from '../time/days.js';
import type { CheckedUpsertSpec } from './upsert.js';

/**
 * Rows a rejected newer version supersedes. When a read of a day serves an item whose key a
 * stored row of that day holds, and the item fails validation, the item goes to rejects and the
 * row stays as it was: the last valid version, no longer what the service holds. The row gets
 * superseded_by_reject_at (migration 0038), kept from the first such read on, so an analyst can
 * tell it is stale; a read that serves a valid version of it again clears the mark (clearServed,
 * src/load/moved-items.ts). Only the row's own UTC day counts: keys may repeat across days
 * (spec 2.3-2.5), so a rejected item on another day may be another item.
 */

/** A key column's value as a rejected item gives it: an integer, or none (the key is unreadable). */
function keyValue(value: unknown): string | undefined {
  if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
  // Digits as text: the same item, its version refused for the type (every key column is bigint).
  if (typeof value === 'string' && /^-?\d{1,18}$/.test(value)) return value;
  return undefined;
}

/** The keys (without the source) of the rejected items whose key fields are all readable, one array per column. */
export function rejectedKeys(spec: CheckedUpsertSpec, rejected: readonly Rejected[]): string[][] {
  const columns = spec.key.filter((c) => c !== 'source_id');
  const keys: string[][] = columns.map(() => []);
  for (const { item } of rejected) {
    if (item === null || typeof item !== 'object' || Array.isArray(item)) continue;
    const values = columns.map((c) =>
      keyValue(Object.hasOwn(item, c) ? (item as Record<string, unknown>)[c] : undefined),
    );
    if (values.some((v) => v === undefined)) continue;
    values.forEach((v, i) => {
      keys[i]?.push(v as string);
    });
  }
  return keys;
}

/** Marks the day's rows whose key a rejected item of the day's read holds. Returns how many it newly marked. */
export async function markSupersededByRejects(
  trx: LoadTransaction,
  spec: CheckedUpsertSpec,
  sourceId: string,
  day: DayString,
  rejected: readonly Rejected[],
): Promise<number> {
  const columns = spec.key.filter((c) => c !== 'source_id');
  const keys = rejectedKeys(spec, rejected);
  if ((keys[0]?.length ?? 0) === 0) return 0;
  // One array per key column: one statement, whatever the number of rejects.
  const arrays = sql.join(keys.map((values) => sql`${values}::bigint[]`));
  const names = sql.join(columns.map((c) => sql.id(c)));
  const match = sql.join(
    columns.map((c) => sql`t.${sql.id(c)} = r.${sql.id(c)}`),
    sql` and `,
  );
  const result = await sql`
    update ${sql.table(spec.table)} t set superseded_by_reject_at = now()
      from unnest(${arrays}) as r(${names})
     where t.source_id = ${sourceId} and ${match} and t.superseded_by_reject_at is null
       and t.dt >= (${day}::timestamp at time zone 'UTC') and t.dt < (${addDays(day, 1)}::timestamp at time zone 'UTC')`.execute(
    trx.db,
  );
  return Number(result.numAffectedRows ?? 0);
}
