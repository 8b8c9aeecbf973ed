import { describe, expect, it } from 'vitest';
import { validateItems } from '../../src/extract/validate.js';
import { feedbackSchema } from '../../src/schemas/feedback.js';
import { heatmapSchema } from '../../src/schemas/heatmap.js';
import { recordingSchema } from '../../src/schemas/recording.js';
import { surveyAnswerSchema } from '../../src/schemas/survey-answer.js';
import { timestampSchema } from '../../src/schemas/timestamp.js';
import { feedback, heatmap, recording, surveyAnswer, visitor } from '../helpers/api-items.js';

describe('validateItems', () => {
  it('passes valid items through, unknown fields kept at every level', () => {
    const item = { ...feedback(), sentiment: 'positive', visitor: { ...visitor(), loyalty_tier: 'gold' } };
    const { valid, rejected } = validateItems(feedbackSchema, [item]);
    expect(rejected).toEqual([]);
    expect(valid).toEqual([item]);
  });

  it('rejects an item missing a required field alone, naming the field', () => {
    const { rating: _dropped, ...missingRating } = feedback();
    const good = [feedback(), { ...feedback(), id: 502 }];
    const { valid, rejected } = validateItems(feedbackSchema, [good[0], missingRating, good[1]]);
    expect(valid).toEqual(good);
    expect(rejected).toHaveLength(1);
    expect(rejected[0]?.item).toBe(missingRating);
    expect(rejected[0]?.error).toMatch(/^rating: /);
  });

  it('rejects a wrong type, naming the field', () => {
    const { valid, rejected } = validateItems(feedbackSchema, [{ ...feedback(), id: '501' }]);
    expect(valid).toEqual([]);
    expect(rejected[0]?.error).toMatch(/^id: /);
  });

  it('names the nested path of a problem inside the visitor', () => {
    const item = { ...surveyAnswer(), visitor: { ...visitor(), id: 1001 } };
    const { rejected } = validateItems(surveyAnswerSchema, [item]);
    expect(rejected[0]?.error).toMatch(/^visitor\.id: /);
  });

  it('lists every problem of one item', () => {
    const item = { ...feedback(), rating: 4.5, visitor: { ...visitor(), device: 5 } };
    const { rejected } = validateItems(feedbackSchema, [item]);
    const problems = (rejected[0]?.error ?? '').split('; ');
    expect(problems).toHaveLength(2);
    expect(problems[0]).toMatch(/^rating: /);
    expect(problems[1]).toMatch(/^visitor\.device: /);
  });

  it('rejects items that are not objects at all', () => {
    const { valid, rejected } = validateItems(recordingSchema, [null, 'text', 42, [recording()]]);
    expect(valid).toEqual([]);
    expect(rejected.map((r) => r.error.split(':')[0])).toEqual(['(item)', '(item)', '(item)', '(item)']);
  });

  it('accepts a survey answer and a recording', () => {
    expect(validateItems(surveyAnswerSchema, [surveyAnswer()]).valid).toHaveLength(1);
    expect(validateItems(recordingSchema, [recording()]).valid).toHaveLength(1);
  });

  it('rejects a recording whose id is a number (recording ids are strings)', () => {
    const { rejected } = validateItems(recordingSchema, [{ ...recording(), id: 42 }]);
    expect(rejected[0]?.error).toMatch(/^id: /);
  });

  it('accepts a heatmap whose end_time is null, but not one without end_time', () => {
    const { end_time: _dropped, ...noEnd } = heatmap();
    const open = { ...heatmap(), end_time: null };
    const { valid, rejected } = validateItems(heatmapSchema, [open, noEnd]);
    expect(valid).toEqual([open]);
    expect(rejected[0]?.error).toMatch(/^end_time: /);
  });

  it('accepts a visitor with an empty company and ref_page, not one with an empty id', () => {
    const anonymous = { ...feedback(), visitor: { ...visitor(), company: '', ref_page: '' } };
    const noId = { ...feedback(), visitor: { ...visitor(), id: '' } };
    const { valid, rejected } = validateItems(feedbackSchema, [anonymous, noId]);
    expect(valid).toEqual([anonymous]);
    expect(rejected[0]?.error).toMatch(/^visitor\.id: /);
  });
});

describe('validateItems: values the warehouse cannot store', () => {
  it('accepts integers above int4: every integer column is bigint (migration 0009)', () => {
    const items = [
      { ...feedback(), rating: 2147483648 },
      { ...recording(), duration: 2 ** 40 },
      { ...heatmap(), heatmap_limit: Number.MAX_SAFE_INTEGER },
    ];
    expect(validateItems(feedbackSchema, [items[0]]).valid).toEqual([items[0]]);
    expect(validateItems(recordingSchema, [items[1]]).valid).toEqual([items[1]]);
    expect(validateItems(heatmapSchema, [items[2]]).valid).toEqual([items[2]]);
  });

  it('rejects an integer beyond 2^53 - 1 with the value and the reason', () => {
    const { valid, rejected } = validateItems(feedbackSchema, [
      { ...feedback(), rating: 2 ** 53 },
      { ...feedback(), id: 502, rating: -1e20 },
    ]);
    expect(valid).toEqual([]);
    expect(rejected.map((r) => r.error)).toEqual([
      'rating: 9007199254740992 is above 9007199254740991 (2^53 - 1), beyond which a JSON number is not read exactly',
      'rating: -100000000000000000000 is below -9007199254740991 (-(2^53 - 1)), beyond which a JSON number is not read exactly',
    ]);
    expect(rejected[0]?.problems).toEqual(['rating: Too big: expected int to be <=9007199254740991']);
  });

  it('rejects a U+0000 alone, naming the field, and loads the rest of the day', () => {
    const good = feedback();
    const bad = { ...feedback(), id: 502, comment: 'fine\u0000print' };
    const { valid, rejected } = validateItems(feedbackSchema, [good, bad]);
    expect(valid).toEqual([good]);
    expect(rejected).toEqual([
      {
        item: bad,
        error: 'comment: contains U+0000, which PostgreSQL text cannot hold',
        problems: ['comment: contains U+0000'],
      },
    ]);
  });

  it('does not alter visitor text: a U+0000 anywhere rejects the item, even in an unknown field', () => {
    const inVisitor = { ...surveyAnswer(), visitor: { ...visitor(), name: 'Ada\u0000' } };
    const inExtra = { ...recording(), x_note: '\u0000' };
    expect(validateItems(surveyAnswerSchema, [inVisitor]).rejected[0]?.error).toBe(
      'visitor.name: contains U+0000, which PostgreSQL text cannot hold',
    );
    expect(validateItems(recordingSchema, [inExtra]).rejected[0]?.error).toMatch(/^x_note: contains U\+0000/);
  });

  it('lists schema problems and storage problems of one item together', () => {
    const item = { ...feedback(), rating: '5', comment: '\u0000' };
    const { rejected } = validateItems(feedbackSchema, [item]);
    expect(rejected[0]?.error).toBe(
      'rating: Invalid input: expected number, received string; comment: contains U+0000, which PostgreSQL text cannot hold',
    );
    expect(rejected[0]?.problems).toEqual([
      'rating: Invalid input: expected number, received string',
      'comment: contains U+0000',
    ]);
  });

  it('rejects a timestamp in year 0000, which PostgreSQL cannot hold', () => {
    const { rejected } = validateItems(heatmapSchema, [
      { ...heatmap(), start_time: '0000-01-01T00:00:00.000Z' },
    ]);
    expect(rejected[0]?.error).toMatch(/^start_time: 0000-01-01T00:00:00\.000Z is in year 0000/);
  });

  it('rejects an item nested deeper than 64 levels', () => {
    let deep: unknown = 'end';
    for (let i = 0; i < 70; i++) deep = { a: deep };
    const { rejected } = validateItems(feedbackSchema, [{ ...feedback(), x_deep: deep }]);
    expect(rejected[0]?.problems).toEqual(['nested deeper than 64 levels']);
  });

  it('still rejects a "__proto__" key, at any depth, before anything else', () => {
    const top = JSON.parse(JSON.stringify(feedback()).replace('{', '{"__proto__":{"x":1},')) as unknown;
    const nested = JSON.parse(
      JSON.stringify({ ...feedback(), comment: '\u0000' }).replace(
        '"visitor":{',
        '"visitor":{"__proto__":null,',
      ),
    ) as unknown;
    const { valid, rejected } = validateItems(feedbackSchema, [top, nested]);
    expect(valid).toEqual([]);
    expect(rejected.map((r) => r.error)).toEqual([
      '(item): a "__proto__" key, which a parsed copy would drop',
      'visitor: a "__proto__" key, which a parsed copy would drop',
    ]);
  });
});

describe('timestamps (spec 2: ISO 8601 UTC with milliseconds)', () => {
  it.each(['2026-01-01T00:00:00.000Z', '2024-02-29T12:30:45.999Z', '2026-12-31T23:59:59.999Z'])(
    'accepts %s',
    (value) => {
      expect(timestampSchema.safeParse(value).success).toBe(true);
    },
  );

  it.each([
    ['without milliseconds', '2026-01-01T00:00:00Z'],
    ['with an offset instead of Z', '2026-01-01T00:00:00.000+00:00'],
    ['without a zone', '2026-01-01T00:00:00.000'],
    ['with microseconds', '2026-01-01T00:00:00.000000Z'],
    ['as a date only', '2026-01-01'],
    ['on February 30th', '2026-02-30T00:00:00.000Z'],
    ['on April 31st', '2026-04-31T00:00:00.000Z'],
    ['on February 29th of a common year', '2026-02-29T00:00:00.000Z'],
    ['in month 13', '2026-13-01T00:00:00.000Z'],
    ['at minute 60', '2026-01-01T10:60:00.000Z'],
  ])('rejects a timestamp %s (%s)', (_why, value) => {
    expect(timestampSchema.safeParse(value).success).toBe(false);
  });

  it('rejects an item whose dt is not a real calendar date, naming dt', () => {
    const { rejected } = validateItems(feedbackSchema, [{ ...feedback(), dt: '2026-02-30T00:00:00.000Z' }]);
    expect(rejected).toHaveLength(1);
    expect(rejected[0]?.error).toMatch(/^dt: /);
  });
});
