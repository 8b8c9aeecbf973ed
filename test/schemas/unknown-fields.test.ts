import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { feedbackSchema } from '../../src/schemas/feedback.js';
import { countUnknownFields, PATH_CHARS, unknownFieldPaths } from '../../src/schemas/unknown-fields.js';
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
});
