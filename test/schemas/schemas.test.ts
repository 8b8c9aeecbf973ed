import { describe, expect, it } from 'vitest';
import { windowedItemSchemas } from '../../src/schemas/resources.js';
import { testResultSchema, testSchema } from '../../src/schemas/test.js';
import { daySchema } from '../../src/schemas/timestamp.js';
import { webhookBodySchema } from '../../src/schemas/webhook.js';
import {
  feedback,
  feedbackWebhook,
  recording,
  surveyAnswer,
  surveyWebhook,
  visitor,
} from '../helpers/api-items.js';

describe('webhookBodySchema (spec 6)', () => {
  it('parses a feedback body, which has no dt, url or rating', () => {
    const body = feedbackWebhook();
    const parsed = webhookBodySchema.parse(body);
    expect(parsed).toEqual(body);
    expect(parsed.type).toBe('feedback');
  });

  it('parses a survey body, whose answer is in `answer`', () => {
    const parsed = webhookBodySchema.parse(surveyWebhook());
    expect(parsed.type).toBe('survey');
    expect(parsed.type === 'survey' && parsed.answer).toBe('A friend');
  });

  it('rejects a survey body that carries the answer in `comment` like the list endpoint', () => {
    const { answer: _dropped, ...body } = surveyWebhook();
    const result = webhookBodySchema.safeParse({ ...body, comment: 'A friend' });
    expect(result.success).toBe(false);
    expect(result.error?.issues.map((issue) => issue.path.join('.'))).toContain('answer');
  });

  it('rejects an unknown or missing type', () => {
    expect(webhookBodySchema.safeParse({ ...feedbackWebhook(), type: 'pageview' }).success).toBe(false);
    const { type: _dropped, ...untyped } = feedbackWebhook();
    expect(webhookBodySchema.safeParse(untyped).success).toBe(false);
  });

  it('keeps unknown fields for the raw column', () => {
    const body = { ...surveyWebhook(), delivered_at: 'later' };
    expect(webhookBodySchema.parse(body)).toEqual(body);
  });

  it.each([
    ['feedback', 'id', '501'],
    ['feedback', 'id', 501.5],
    ['feedback', 'feedback_id', '77'],
    ['survey', 'id', '901'],
    ['survey', 'question_id', 3.5],
    ['survey', 'question_id', '3'],
  ])('requires the natural key fields of a %s body to be integers (%s = %j)', (type, field, value) => {
    const body = type === 'feedback' ? feedbackWebhook() : surveyWebhook();
    const result = webhookBodySchema.safeParse({ ...body, [field]: value });
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.path).toEqual([field]);
  });

  it('validates the visitor inside the body', () => {
    const result = webhookBodySchema.safeParse({ ...feedbackWebhook(), visitor: { ...visitor(), id: '' } });
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.path).toEqual(['visitor', 'id']);
  });
});

describe('resource schemas', () => {
  it('maps each windowed resource to the schema of its items', () => {
    expect(windowedItemSchemas.feedback.safeParse(feedback()).success).toBe(true);
    expect(windowedItemSchemas.survey.safeParse(surveyAnswer()).success).toBe(true);
    expect(windowedItemSchemas.recordings.safeParse(recording()).success).toBe(true);
    expect(windowedItemSchemas.survey.safeParse(feedback()).success).toBe(false);
  });

  it('reads a test and its per-variant results (spec 2.1, 2.2)', () => {
    const test = {
      id: 'ab-1',
      test_name: 'Green button',
      url: 'https://shop.example.com/',
      goal_profile_id: 'g-1',
      created_at: '2026-01-01T00:00:00.000Z',
      updated_at: '2026-01-02T00:00:00.000Z',
    };
    expect(testSchema.safeParse(test).success).toBe(true);
    expect(testSchema.safeParse({ ...test, id: '' }).success).toBe(false);
    expect(testResultSchema.safeParse({ variant: 'control', complete: 12, total: 40 }).success).toBe(true);
    expect(testResultSchema.safeParse({ variant: 'control', complete: -1, total: 40 }).success).toBe(false);
    expect(testResultSchema.safeParse({ variant: 'control', complete: 1, total: '40' }).success).toBe(false);
  });

  it('reads a day as YYYY-MM-DD, real calendar days only', () => {
    expect(daySchema.safeParse('2024-02-29').success).toBe(true);
    for (const bad of ['2026-02-29', '2026-02-30', '2026-1-01', '2026-01-01T00:00:00.000Z', '']) {
      expect(daySchema.safeParse(bad).success, bad).toBe(false);
    }
  });
});
