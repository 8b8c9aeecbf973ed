import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { driftTableOf } from '../../src/schemas/drift-paths.js';
import { feedbackSchema } from '../../src/schemas/feedback.js';
import {
  countUnknownFields,
  countUnknownTestFields,
  PATH_CHARS,
  unknownFieldPaths,
} from '../../src/schemas/unknown-fields.js';
import { feedback } from '../helpers/api-items.js';

describe('fields the spec does not describe', () => {
  it('names the unknown keys of an item and of its nested objects and lists, not the known ones', () => {
    const schema = z.looseObject({
      id: z.int(),
      visitor: z.looseObject({ id: z.string() }).nullable(),
      tags: z.array(z.looseObject({ name: z.string() })).optional(),
    });
    const item = {
      id: 1,
      x_new: { deep: true },
      visitor: { id: 'v', x_visitor: 1 },
      tags: [{ name: 'a' }, { name: 'b', x_tag: 2 }, { name: 'c', x_tag: 3 }],
    };
    expect(unknownFieldPaths(schema, item).sort()).toEqual(['tags[].x_tag', 'visitor.x_visitor', 'x_new']);
    expect(unknownFieldPaths(schema, { id: 1, visitor: null })).toEqual([]);
    // A key is untrusted: a huge one is cut, so it can still be listed.
    const [long] = unknownFieldPaths(schema, { id: 1, ['k'.repeat(100_000)]: 1 });
    expect(long).toBe(`${'k'.repeat(PATH_CHARS - 1)}…`);
  });

  it('counts the items carrying each field once per item', () => {
    const plain = feedback();
    const extra = { ...feedback(), x_score: 0.5 };
    expect(unknownFieldPaths(feedbackSchema, plain)).toEqual([]);
    expect(countUnknownFields(feedbackSchema, [plain, extra, extra])).toEqual(new Map([['x_score', 2]]));
  });

  it('counts a test and its variants as one item, the variants under results[]', () => {
    const test = z.looseObject({ id: z.string() });
    const variant = z.looseObject({ variant: z.string() });
    const results: Record<string, object[]> = {
      a: [
        { variant: 'v1', x_v: 1 },
        { variant: 'v2', x_v: 2 },
      ],
      b: [{ variant: 'v1' }],
    };
    const counts = countUnknownTestFields(
      test,
      variant,
      [{ id: 'a', x_t: 1 }, { id: 'b', x_t: 2 }, { id: 'c' }],
      (t) => results[t.id] ?? [],
    );
    expect(counts).toEqual(
      new Map([
        ['x_t', 2],
        ['results[].x_v', 1],
      ]),
    );
  });

  it("names the table whose raw holds a field: a variant's is test_results", () => {
    expect(driftTableOf('ab_tests', 'abtesting', 'results[].x_v')).toEqual({
      table: 'test_results',
      field: 'x_v',
    });
    expect(driftTableOf('ab_tests', 'abtesting', 'x_t')).toEqual({ table: 'ab_tests', field: 'x_t' });
    // A windowed item's own list of that name stays in its table.
    expect(driftTableOf('recordings', 'recordings', 'results[].x')).toEqual({
      table: 'recordings',
      field: 'results[].x',
    });
  });
});
