import { MAX_ITEM_DEPTH } from '../schemas/storable.js';

/**
 * How deep an answer's items may nest before the rest is cut, as it is parsed. JSON.parse reads
 * any depth, but JSON.stringify (sizing an answer, an item's identity, its raw copy) and zod
 * recurse: one item nested 20,000 levels deep overflowed the stack and failed its whole day
 * window. Cut one level below what the warehouse stores (MAX_ITEM_DEPTH), such an item still
 * fails validation as nested too deep (src/extract/validate.ts) and goes to rejects with that
 * reason, its stored copy cut at MAX_ITEM_DEPTH exactly as before; the rest of its day loads.
 */
export const KEPT_DEPTH = MAX_ITEM_DEPTH + 1;

/** What takes the place of an object or array nested deeper than KEPT_DEPTH. */
export const DEPTH_CUT = `(cut: nested deeper than ${KEPT_DEPTH} levels)`;

/**
 * Replaces, in place, each object or array nested deeper than KEPT_DEPTH below an item (an item
 * itself is level 0) by DEPTH_CUT. Returns how many items were cut. Iterative: items are
 * untrusted. Keys are kept as JSON.parse made them (an own "__proto__" stays a plain key).
 */
export function cutDeepNesting(items: unknown[]): number {
  let cutItems = 0;
  for (const item of items) {
    let cut = false;
    const stack: Array<{ value: object; depth: number }> = [];
    if (item !== null && typeof item === 'object') stack.push({ value: item, depth: 0 });
    for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
      const container = next.value as Record<string, unknown>;
      const depth = next.depth + 1;
      for (const key of Object.keys(container)) {
        const child = container[key];
        if (child === null || typeof child !== 'object') continue;
        if (depth < KEPT_DEPTH) {
          stack.push({ value: child, depth });
          continue;
        }
        // Defined, not assigned: assigning to an own "__proto__" key would set a prototype.
        Object.defineProperty(container, key, {
          value: DEPTH_CUT,
          writable: true,
          enumerable: true,
          configurable: true,
        });
        cut = true;
      }
    }
    if (cut) cutItems += 1;
  }
  return cutItems;
}
