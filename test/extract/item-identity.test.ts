import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { itemIdentity } from '../../src/extract/item-identity.js';
import { itemTime } from '../../src/extract/server-reading.js';

const sha256 = (text: string) => createHash('sha256').update(text).digest('base64');

describe('itemIdentity', () => {
  it('is the hash of the JSON text, asked once or again, of one object or of an equal one', () => {
    const item = { id: 1, dt: '2026-03-01T10:00:00.000Z', visitor: { id: 'v-1' } };
    const expected = sha256(JSON.stringify(item));
    expect(itemIdentity(item)).toBe(expected);
    expect(itemIdentity(item)).toBe(expected);
    expect(itemIdentity(JSON.parse(JSON.stringify(item)))).toBe(expected);
  });

  it('tells items apart by their text, keys in their order', () => {
    expect(itemIdentity({ id: 1, a: 2 })).not.toBe(itemIdentity({ id: 1, a: 3 }));
    expect(itemIdentity({ a: 1, b: 2 })).not.toBe(itemIdentity({ b: 2, a: 1 }));
    expect(itemIdentity('text')).toBe(sha256('"text"'));
    expect(itemIdentity(null)).toBe(sha256('null'));
  });

  it('leaves the item as it was to everything that reads it: its JSON, its keys, a copy, a comparison', () => {
    const item = { id: 1, dt: '2026-03-01T10:00:00.000Z', visitor: { id: 'v-1' } };
    const before = JSON.stringify(item);
    itemIdentity(item);
    expect(JSON.stringify(item)).toBe(before);
    expect(Object.keys(item)).toEqual(['id', 'dt', 'visitor']);
    expect({ ...item }).toStrictEqual(JSON.parse(before));
    expect(item).toStrictEqual(JSON.parse(before));
  });

  it('identifies an item that cannot be added to, every time it is asked', () => {
    const item = Object.freeze({ id: 1, dt: '2026-03-01T10:00:00.000Z' });
    const expected = sha256(JSON.stringify(item));
    expect([itemIdentity(item), itemIdentity(item)]).toEqual([expected, expected]);
  });
});

describe('itemTime', () => {
  it("reads an item's dt once, however often asked, and leaves the item as it was", () => {
    const item = { id: 1, dt: '2026-03-01T10:00:00.000Z' };
    const before = JSON.stringify(item);
    expect([itemTime(item), itemTime(item)]).toEqual([Date.parse(item.dt), Date.parse(item.dt)]);
    expect(JSON.stringify(item)).toBe(before);
    expect(item).toStrictEqual(JSON.parse(before));
  });

  it('has none for an item without a readable dt, asked once or again, nor for what is not an object', () => {
    for (const item of [{ id: 1 }, { id: 2, dt: 'yesterday' }, { id: 3, dt: 17 }, Object.freeze({ id: 4 })])
      expect([itemTime(item), itemTime(item)], JSON.stringify(item)).toEqual([undefined, undefined]);
    expect([itemTime(null), itemTime('2026-03-01T10:00:00.000Z')]).toEqual([undefined, undefined]);
  });
});
