import type { WindowedResource } from '../schemas/resources.js';
import { hashSeed, unitHash } from './random.js';

/**
 * Values that are valid by the spec's JSON types (section 2) yet break a careless client: an
 * integer that does not fit a 32-bit column, and a string holding a NUL character, which
 * PostgreSQL text cannot store. Which items get one, and which, is fixed by the seed and the key.
 */
export type OddKind = 'int-overflow' | 'nul';
export type OddResource = WindowedResource | 'heatmaps';

export interface OddChoice {
  field: string;
  kind: OddKind;
}

/** 2^31: one above the largest int4, still an exact JSON integer. */
export const INT4_OVERFLOW = 2_147_483_648;

const CHOICES: Record<OddResource, readonly OddChoice[]> = {
  feedback: [
    { field: 'rating', kind: 'int-overflow' },
    { field: 'comment', kind: 'nul' },
  ],
  survey: [{ field: 'comment', kind: 'nul' }],
  recordings: [
    { field: 'duration', kind: 'int-overflow' },
    { field: 'city', kind: 'nul' },
  ],
  heatmaps: [{ field: 'heatmap_limit', kind: 'int-overflow' }],
};

/** The odd value the item with this key gets, or null for most items. */
export function oddChoice(seed: number, resource: OddResource, key: string, rate: number): OddChoice | null {
  if (rate <= 0 || unitHash(seed, 'odd', resource, key) >= rate) return null;
  const choices = CHOICES[resource];
  return choices[hashSeed(seed, 'odd-kind', resource, key) % choices.length] ?? null;
}

/** A copy of the item with the odd value in place. */
export function withOddValue<T extends object>(item: T, choice: OddChoice): T {
  const copy = { ...item } as Record<string, unknown>;
  if (choice.kind === 'int-overflow') {
    copy[choice.field] = INT4_OVERFLOW;
  } else {
    // In the middle, so a client that only trims the ends still meets it.
    const text = String(copy[choice.field] ?? '');
    const middle = Math.floor(text.length / 2);
    copy[choice.field] = `${text.slice(0, middle)}\u0000${text.slice(middle)}`;
  }
  return copy as T;
}
