/**
 * Seeded randomness. Every piece of simulated data is drawn from a stream seeded by a hash of
 * (seed, what, where), never from a shared stream: a day's items are then the same whichever days
 * were generated before it and whatever requests came in.
 */
export interface Random {
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform integer in [min, max], both inclusive. */
  int(min: number, max: number): number;
  pick<T>(items: readonly T[]): T;
  chance(probability: number): boolean;
}

/** A 32-bit hash of the parts (FNV-1a with a murmur3 finaliser, so near inputs give far seeds). */
export function hashSeed(...parts: ReadonlyArray<string | number>): number {
  let h = 0x811c9dc5;
  for (const part of parts) {
    const text = String(part);
    for (let i = 0; i < text.length; i++) {
      h ^= text.charCodeAt(i);
      h = Math.imul(h, 0x01000193);
    }
    // A separator, so ('ab', 'c') and ('a', 'bc') hash differently.
    h ^= 0x1f;
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** A stable number in [0, 1) for the parts: a coin that lands the same way every time. */
export function unitHash(...parts: ReadonlyArray<string | number>): number {
  return hashSeed(...parts) / 4294967296;
}

/** Eight hex digits derived from the parts, for ids that look opaque but never change. */
export function hexHash(...parts: ReadonlyArray<string | number>): string {
  return hashSeed(...parts)
    .toString(16)
    .padStart(8, '0');
}

/** mulberry32: tiny, fast and good enough for test data (not for anything secret). */
export function createRandom(seed: number): Random {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    pick: <T>(items: readonly T[]): T => {
      if (items.length === 0) throw new Error('cannot pick from an empty list');
      return items[Math.floor(next() * items.length)] as T;
    },
    chance: (probability) => next() < probability,
  };
}
