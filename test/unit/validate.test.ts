import { describe, expect, it } from 'vitest';
import { validateItems } from '../../src/extract/validate.js';
import { feedbackSchema } from '../../src/schemas/feedback.js';
import { heatmapSchema } from '../../src/schemas/heatmap.js';
import { recordingSchema } from '../../src/schemas/recording.js';
import { surveyAnswerSchema } from '../../src/schemas/survey-answer.js';
import { timestampSchema } from '../../src/schemas/timestamp.js';
import { feedback, heatmap, recording, surveyAnswer, visitor } from './api-items.js';

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
