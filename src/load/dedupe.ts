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

/**
 * The items with the copies of each key next to each other, best first: the copy dedupeByKey
 * would keep (its canonical JSON sorts last) before the others. The window's merge keeps the first
 * copy of each key whose visitor is not forgotten (migration 0041), as dedupeByKey would after the
 * forgotten visitors' items are dropped. Items without a repeated key come back as they are, and
 * only the copies of a repeated key are rendered as canonical JSON.
 */
export function bestCopyFirst<T>(items: readonly T[], keyOf: (item: T) => string): readonly T[] {
  const byKey = new Map<string, T[]>();
  let repeated = false;
  for (const item of items) {
    const key = keyOf(item);
    const copies = byKey.get(key);
    if (copies === undefined) byKey.set(key, [item]);
    else {
      copies.push(item);
      repeated = true;
    }
  }
  if (!repeated) return items;
  return [...byKey.values()].flatMap((copies) => {
    if (copies.length === 1) return copies;
    const rendered = copies.map((item) => ({ item, json: canonicalJson(item) }));
    // Stable: equal copies keep their order.
    rendered.sort((a, b) => (a.json > b.json ? -1 : a.json < b.json ? 1 : 0));
    return rendered.map((copy) => copy.item);
  });
}
