import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/db/canonical-json.js';
import { feedbackSchema } from '../../src/schemas/feedback.js';
import { heatmapSchema } from '../../src/schemas/heatmap.js';
import {
  MAX_ITEM_DEPTH,
  storableCopy,
  storableText,
  unstorableFields,
  unstorableJson,
} from '../../src/schemas/storable.js';
import { feedback, heatmap, visitor } from '../helpers/api-items.js';

/** An object nested `levels` deep: { a: { a: ... { a: 'end' } } }. */
function nested(levels: number): unknown {
  let value: unknown = 'end';
  for (let i = 0; i < levels; i++) value = { a: value };
  return value;
}

describe('unstorableJson', () => {
  it('finds nothing in a valid item', () => {
    expect(unstorableJson(feedback())).toEqual([]);
  });

  it('names a string holding U+0000, with the path and why', () => {
    const problems = unstorableJson({ ...feedback(), comment: 'bad\u0000day' });
    expect(problems).toEqual([
      {
        key: 'comment: contains U+0000',
        message: 'comment: contains U+0000, which PostgreSQL text cannot hold',
      },
    ]);
  });

  it('finds U+0000 at any depth, in unknown fields and arrays', () => {
    const item = { ...feedback(), visitor: { ...visitor(), name: '\u0000' }, x_tags: ['ok', 'n\u0000'] };
    expect(unstorableJson(item).map((p) => p.message)).toEqual([
      'visitor.name: contains U+0000, which PostgreSQL text cannot hold',
      'x_tags.1: contains U+0000, which PostgreSQL text cannot hold',
    ]);
  });

  it('finds U+0000 in a key, and the path it shows is storable itself', () => {
    const problems = unstorableJson({ ...feedback(), 'x\u0000y': 1 });
    expect(problems).toEqual([
      {
        key: 'x\uFFFDy (a key): contains U+0000',
        message: 'x\uFFFDy (a key): contains U+0000, which PostgreSQL jsonb cannot hold',
      },
    ]);
  });

  it('finds unpaired surrogates (high or low alone) but not a proper pair', () => {
    expect(unstorableJson({ a: 'emoji \u{1F600}' })).toEqual([]);
    expect(unstorableJson({ a: 'x\uD800', b: '\uDC00x' }).map((p) => p.key)).toEqual([
      'a: contains an unpaired UTF-16 surrogate',
      'b: contains an unpaired UTF-16 surrogate',
    ]);
    expect(unstorableJson({ a: '\u0000\uD800' })[0]?.key).toBe(
      'a: contains U+0000 and an unpaired UTF-16 surrogate',
    );
  });

  it('names an item that is a bad string itself as (item)', () => {
    expect(unstorableJson('\u0000')[0]?.key).toBe('(item): contains U+0000');
  });

  it(`accepts nesting of ${MAX_ITEM_DEPTH} levels and reports one deeper once`, () => {
    expect(unstorableJson(nested(MAX_ITEM_DEPTH))).toEqual([]);
    const problems = unstorableJson(nested(MAX_ITEM_DEPTH + 1));
    expect(problems).toHaveLength(1);
    expect(problems[0]?.key).toBe(`nested deeper than ${MAX_ITEM_DEPTH} levels`);
    expect(problems[0]?.message).toMatch(/^a\.a\.a.*: nested deeper than 64 levels/);
  });

  it('walks an item nested 100,000 levels deep without overflowing the stack', () => {
    expect(unstorableJson(nested(100_000))).toHaveLength(1);
  });

  it('lists the first 10 bad strings of an item and counts the rest', () => {
    const item = Object.fromEntries(Array.from({ length: 25 }, (_, i) => [`f${i}`, '\u0000']));
    const problems = unstorableJson(item);
    expect(problems).toHaveLength(11);
    expect(problems[10]?.message).toBe('and 15 more strings PostgreSQL cannot hold');
  });
});

describe('unstorableFields', () => {
  it('names a timestamp in year 0000, which the pattern allows and PostgreSQL does not', () => {
    const item = { ...feedback(), dt: '0000-06-01T00:00:00.000Z' };
    expect(feedbackSchema.safeParse(item).success).toBe(true);
    expect(unstorableFields(feedbackSchema, item)).toEqual([
      {
        key: 'dt: year 0000',
        message:
          'dt: 0000-06-01T00:00:00.000Z is in year 0000, which a PostgreSQL timestamp cannot hold (its years start at 0001)',
      },
    ]);
  });

  it('finds timestamps inside nested schemas and nullable fields', () => {
    const fb = { ...feedback(), visitor: { ...visitor(), created_at: '0000-01-01T00:00:00.000Z' } };
    expect(unstorableFields(feedbackSchema, fb).map((p) => p.key)).toEqual(['visitor.created_at: year 0000']);
    const hm = { ...heatmap(), end_time: '0000-01-01T00:00:00.000Z' };
    expect(unstorableFields(heatmapSchema, hm).map((p) => p.key)).toEqual(['end_time: year 0000']);
    expect(unstorableFields(heatmapSchema, { ...heatmap(), end_time: null })).toEqual([]);
  });

  it('accepts year 0001 and leaves unknown fields alone', () => {
    const item = { ...feedback(), dt: '0001-01-01T00:00:00.000Z', x_when: '0000-01-01T00:00:00.000Z' };
    expect(unstorableFields(feedbackSchema, item)).toEqual([]);
  });
});

describe('storableCopy (what rejects.item stores)', () => {
  it('returns the value itself when PostgreSQL can hold it', () => {
    const item = feedback();
    const copy = storableCopy(item);
    expect(copy.value).toBe(item);
    expect(copy.notes).toEqual([]);
  });

  it('shows U+0000 and unpaired surrogates as U+FFFD, in values and keys, and says so', () => {
    const item = { comment: 'a\u0000b', 'k\u0000': ['x\uD800'], n: 1, ok: null };
    const copy = storableCopy(item);
    expect(canonicalJson(copy.value)).toBe(
      canonicalJson({ comment: 'a\uFFFDb', 'k\uFFFD': ['x\uFFFD'], n: 1, ok: null }),
    );
    expect(copy.notes).toEqual(['U+0000 and unpaired surrogates shown as U+FFFD']);
    // The item itself is untouched.
    expect(item.comment).toBe('a\u0000b');
  });

  it('cuts nesting below 64 levels, without overflowing the stack', () => {
    const copy = storableCopy(nested(100_000));
    expect(copy.notes).toEqual(['nesting below 64 levels cut']);
    expect(canonicalJson(copy.value)).toContain('(cut: nested deeper than 64 levels)');
  });

  it('keeps an own "__proto__" key as a plain key', () => {
    const item = JSON.parse('{"__proto__": {"polluted": true}, "comment": "\\u0000"}') as unknown;
    const copy = storableCopy(item);
    expect(canonicalJson(copy.value)).toBe('{"__proto__":{"polluted":true},"comment":"\uFFFD"}');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('storableText', () => {
  it('replaces only what PostgreSQL cannot hold', () => {
    expect(storableText('plain \u{1F600}')).toBe('plain \u{1F600}');
    expect(storableText('a\u0000b\uDC00')).toBe('a\uFFFDb\uFFFD');
  });
});
