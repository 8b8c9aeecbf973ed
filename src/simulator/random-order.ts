import type { Random } from './random.js';

/**
 * `wanted` items drawn uniformly from `items`, in random order: each item gets a random rank and
 * the lowest ranks win. Only about 2 x wanted items are held at a time, so a shuffled request
 * over a year of data streams the days through instead of building them all at once.
 */
export function randomSample<T>(items: Iterable<T>, wanted: number, rng: Random): T[] {
  let kept: Array<{ rank: number; item: T }> = [];
  const byRank = (a: { rank: number }, b: { rank: number }): number => a.rank - b.rank;
  for (const item of items) {
    kept.push({ rank: rng.next(), item });
    if (kept.length >= 2 * wanted + 64) kept = kept.sort(byRank).slice(0, wanted);
  }
  return kept
    .sort(byRank)
    .slice(0, wanted)
    .map((entry) => entry.item);
}
