import type { Rejected } from '../schemas/rejected.js';
import type { CheckedUpsertSpec } from './upsert.js';

/**
 * Rows a rejected newer version supersedes. When a read of a day serves an item whose key a
 * stored row of that day holds, and the item fails validation, the item goes to rejects and the
 * row stays as it was: the last valid version, no longer what the service holds. The row gets
 * superseded_by_reject_at (migration 0038), kept from the first such read on, so an analyst can
 * tell it is stale; a read that serves a valid version of it again clears the mark
 * (src/load/moved-items.ts). Only the row's own UTC day counts: keys may repeat across days
 * (spec 2.3-2.5), so a rejected item on another day may be another item. The window's merge sets
 * the marks (migration 0041), from the keys found here.
 */

/** A key column's value as a rejected item gives it: an integer, or none (the key is unreadable). */
function keyValue(value: unknown): string | undefined {
  if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
  // Digits as text: the same item, its version refused for the type (every key column is bigint).
  if (typeof value === 'string' && /^-?\d{1,18}$/.test(value)) return value;
  return undefined;
}

/** The key (without the source) a rejected item names, when all its key fields are readable. */
export function rejectedKey(spec: CheckedUpsertSpec, rejected: Rejected): string[] | undefined {
  const { item } = rejected;
  if (item === null || typeof item !== 'object' || Array.isArray(item)) return undefined;
  const values: string[] = [];
  for (const c of spec.key) {
    if (c === 'source_id') continue;
    const value = keyValue(Object.hasOwn(item, c) ? (item as Record<string, unknown>)[c] : undefined);
    if (value === undefined) return undefined;
    values.push(value);
  }
  return values;
}

/** The keys (without the source) of the rejected items whose key fields are all readable, one array per column. */
export function rejectedKeys(spec: CheckedUpsertSpec, rejected: readonly Rejected[]): string[][] {
  const keys: string[][] = spec.key.filter((c) => c !== 'source_id').map(() => []);
  for (const reject of rejected)
    rejectedKey(spec, reject)?.forEach((v, i) => {
      keys[i]?.push(v);
    });
  return keys;
}
