import { canonicalJson } from '../db/canonical-json.js';

export interface Deduped<T> {
  items: T[];
  /** Keys that came more than once with different content (each such key counted once). */
  conflicts: number;
  /** Extra copies dropped (identical or not). */
  duplicates: number;
}

/**
 * Postgres refuses to update one row twice in a statement, so items sharing a key are reduced to
 * one first. Which copy wins must not depend on the server's order: the one whose canonical JSON
 * sorts last. Differing copies are counted, not hidden.
 */
export function dedupeByKey<T>(items: readonly T[], keyOf: (item: T) => string): Deduped<T> {
  const byKey = new Map<string, { item: T; json: string | undefined; conflicted: boolean }>();
  let conflicts = 0;
  let duplicates = 0;
  for (const item of items) {
    const key = keyOf(item);
    const existing = byKey.get(key);
    if (existing === undefined) {
      byKey.set(key, { item, json: undefined, conflicted: false });
      continue;
    }
    duplicates += 1;
    existing.json ??= canonicalJson(existing.item);
    const json = canonicalJson(item);
    if (json !== existing.json) {
      if (!existing.conflicted) conflicts += 1;
      existing.conflicted = true;
      if (json > existing.json) {
        existing.item = item;
        existing.json = json;
      }
    }
  }
  return { items: [...byKey.values()].map((entry) => entry.item), conflicts, duplicates };
}
