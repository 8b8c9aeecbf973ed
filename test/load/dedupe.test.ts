import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, contentHash } from '../../src/db/canonical-json.js';
import { dedupeByKey } from '../../src/load/dedupe.js';

interface Item {
  id: number;
  [field: string]: unknown;
}

const byId = (item: Item) => String(item.id);

function permutations<T>(items: readonly T[]): T[][] {
  if (items.length <= 1) return [[...items]];
  return items.flatMap((item, i) =>
    permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [item, ...rest]),
  );
}

describe('dedupeByKey', () => {
  it('keeps items with distinct keys, in order, with nothing counted', () => {
    const items = [{ id: 3 }, { id: 1 }, { id: 2 }];
    expect(dedupeByKey(items, byId)).toEqual({ items, conflicts: 0, duplicates: 0 });
  });

  it('counts identical copies as duplicates, not conflicts', () => {
    const result = dedupeByKey([{ id: 1, v: 'a' }, { id: 2 }, { id: 1, v: 'a' }, { id: 1, v: 'a' }], byId);
    expect(result.items).toEqual([{ id: 1, v: 'a' }, { id: 2 }]);
    expect(result.duplicates).toBe(2);
    expect(result.conflicts).toBe(0);
  });

  it('sees copies that differ only in key order as identical', () => {
    const result = dedupeByKey(
      [
        { id: 1, a: 1, b: { x: 1, y: 2 } },
        { b: { y: 2, x: 1 }, a: 1, id: 1 },
      ],
      byId,
    );
    expect(result).toMatchObject({ duplicates: 1, conflicts: 0 });
  });

  it('counts differing copies as a conflict and as a duplicate', () => {
    const result = dedupeByKey(
      [
        { id: 1, v: 'a' },
        { id: 1, v: 'b' },
      ],
      byId,
    );
    expect(result.items).toHaveLength(1);
    expect(result).toMatchObject({ duplicates: 1, conflicts: 1 });
  });

  it('picks the same winner whatever the input order', () => {
    const copies: Item[] = [
      { id: 1, v: 'b' },
      { id: 1, v: 'a' },
      { id: 1, v: 'c', extra: true },
      { id: 1, v: 'a' },
    ];
    const winners = permutations(copies).map((order) => canonicalJson(dedupeByKey(order, byId).items));
    expect(new Set(winners).size).toBe(1);
  });

  it('counts conflicts per key with differing copies, whatever the input order', () => {
    // Deduped.conflicts: "Keys that came more than once with different content".
    const a = { id: 1, v: 'a' };
    const b = { id: 1, v: 'b' };
    for (const order of [
      [a, a, b],
      [a, b, a],
      [b, a, a],
    ]) {
      expect(dedupeByKey(order, byId).conflicts, JSON.stringify(order)).toBe(1);
    }
  });

  it('gives the same items and duplicate count for any shuffle of random input', () => {
    const item = fc.record({
      id: fc.integer({ min: 1, max: 5 }),
      v: fc.constantFrom('a', 'b', 'c'),
      n: fc.nat(2),
    });
    const input = fc
      .array(item, { maxLength: 12 })
      .chain((items) =>
        fc.tuple(
          fc.constant(items),
          fc.shuffledSubarray(items, { minLength: items.length, maxLength: items.length }),
        ),
      );
    fc.assert(
      fc.property(input, ([items, shuffled]) => {
        const sortedById = (list: Item[]) => [...list].sort((x, y) => x.id - y.id);
        const first = dedupeByKey(items, byId);
        const second = dedupeByKey(shuffled, byId);
        expect(sortedById(second.items)).toEqual(sortedById(first.items));
        expect(second.duplicates).toBe(first.duplicates);
        expect(first.duplicates).toBe(items.length - new Set(items.map(byId)).size);
      }),
      { numRuns: 300 },
    );
  });
});

describe('canonicalJson', () => {
  it('sorts object keys at every level', () => {
    const text = '{"a":{"c":2,"d":[{"e":1,"f":2}]},"b":1}';
    expect(canonicalJson({ b: 1, a: { d: [{ f: 2, e: 1 }], c: 2 } })).toBe(text);
    expect(canonicalJson({ a: { c: 2, d: [{ e: 1, f: 2 }] }, b: 1 })).toBe(text);
  });

  it('keeps array order, which is content', () => {
    expect(canonicalJson([1, 2])).not.toBe(canonicalJson([2, 1]));
  });

  it('keeps an own "__proto__" key of parsed JSON (API data is untrusted)', () => {
    const withProto = JSON.parse('{"__proto__":{"x":1},"a":1}');
    expect(canonicalJson(withProto)).toBe('{"__proto__":{"x":1},"a":1}');
    expect(canonicalJson(withProto)).not.toBe(canonicalJson({ a: 1 }));
  });
});

describe('contentHash', () => {
  it('is the same for the same content in any key order', () => {
    expect(contentHash({ a: 1, b: { c: [1, 2] } })).toBe(contentHash({ b: { c: [1, 2] }, a: 1 }));
  });

  it('differs when a value differs', () => {
    expect(contentHash({ a: 1 })).not.toBe(contentHash({ a: 2 }));
    expect(contentHash({ a: 1 })).not.toBe(contentHash({ a: '1' }));
  });

  it('is stable across releases: md5 hex of the canonical JSON', () => {
    // Hashes are stored (rejects table): changing the function would duplicate stored rows.
    expect(contentHash({ b: 2, a: 1 })).toBe('608de49a4600dbb5b173492759792e4a');
  });
});
