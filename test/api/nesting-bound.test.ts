import { describe, expect, it } from 'vitest';
import { cutDeepNesting, DEPTH_CUT, KEPT_DEPTH } from '../../src/api/nesting-bound.js';
import { validateItems } from '../../src/extract/validate.js';
import { windowedItemSchemas } from '../../src/schemas/resources.js';
import { MAX_ITEM_DEPTH, storableCopy } from '../../src/schemas/storable.js';
import { feedback } from '../helpers/api-items.js';

/** JSON text of an item whose field x_deep nests `depth` arrays (JSON.stringify cannot write a deep one). */
const withDeepField = (depth: number) =>
  `${JSON.stringify(feedback()).slice(0, -1)},"x_deep":${'['.repeat(depth)}${']'.repeat(depth)}}`;

/** How many levels the value nests below the item, the item being level 0. */
function depthOf(value: unknown): number {
  let most = 0;
  const stack: Array<[unknown, number]> = [[value, 0]];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const [current, depth] = next;
    if (current === null || typeof current !== 'object') continue;
    most = Math.max(most, depth);
    for (const child of Object.values(current)) stack.push([child, depth + 1]);
  }
  return most;
}

describe('cutDeepNesting', () => {
  it('cuts an item nested 20,000 levels to KEPT_DEPTH: it can be written as JSON, and is rejected as too deep', () => {
    const items = JSON.parse(`[${withDeepField(20_000)},${JSON.stringify(feedback())}]`) as unknown[];
    expect(() => JSON.stringify(items)).toThrow(RangeError);
    expect(cutDeepNesting(items)).toBe(1);
    expect(depthOf(items[0])).toBe(KEPT_DEPTH - 1);
    expect(JSON.stringify(items)).toContain(JSON.stringify(DEPTH_CUT));
    const { valid, rejected } = validateItems(windowedItemSchemas.feedback, items);
    expect(valid).toHaveLength(1);
    expect(rejected).toHaveLength(1);
    expect(rejected[0]?.error).toContain(`nested deeper than ${MAX_ITEM_DEPTH} levels`);
  });

  it('stores the same reject as an item cut nowhere: its copy is cut at MAX_ITEM_DEPTH either way', () => {
    const [cut] = JSON.parse(`[${withDeepField(20_000)}]`) as unknown[];
    cutDeepNesting([cut]);
    const [whole] = JSON.parse(`[${withDeepField(KEPT_DEPTH + 5)}]`) as unknown[];
    expect(JSON.stringify(storableCopy(cut).value)).toBe(JSON.stringify(storableCopy(whole).value));
  });

  it('leaves items nesting KEPT_DEPTH levels or fewer as they are', () => {
    const text = `[${withDeepField(KEPT_DEPTH - 1)},${JSON.stringify(feedback())}]`;
    const items = JSON.parse(text) as unknown[];
    expect(cutDeepNesting(items)).toBe(0);
    expect(items).toEqual(JSON.parse(text));
  });

  it('keeps an own "__proto__" key a plain key where it cuts', () => {
    const nested = `${'{"a":'.repeat(KEPT_DEPTH - 1)}{"__proto__":{"b":1}}${'}'.repeat(KEPT_DEPTH - 1)}`;
    const items = JSON.parse(`[${nested}]`) as unknown[];
    expect(cutDeepNesting(items)).toBe(1);
    let at = items[0] as Record<string, unknown>;
    for (let i = 0; i < KEPT_DEPTH - 1; i++) at = at.a as Record<string, unknown>;
    expect(Object.getPrototypeOf(at)).toBe(Object.prototype);
    expect(Object.hasOwn(at, '__proto__')).toBe(true);
    expect(Object.getOwnPropertyDescriptor(at, '__proto__')?.value).toBe(DEPTH_CUT);
  });
});
