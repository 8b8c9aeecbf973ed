import type { CopyValue } from '../db/copy-text.js';
import type { SurveyAnswer } from '../schemas/survey-answer.js';
import type { UpsertSpec } from './upsert.js';

export const surveyAnswerSpec: UpsertSpec<'survey_answers'> = {
  table: 'survey_answers',
  key: ['source_id', 'id', 'question_id'],
  columns: [
    'source_id',
    'id',
    'question_id',
    'question',
    'session',
    'comment',
    'dt',
    'url',
    'visitor_id',
    'raw',
  ],
  compare: ['raw'],
  collisions: { resource: 'survey' },
  // Webhook deliveries write provisional rows into this table too (src/load/webhook-items.ts).
  origin: true,
};

export const surveyAnswerKey = (item: SurveyAnswer): string => `${item.id}/${item.question_id}`;

export function surveyAnswerRow(sourceId: string, item: SurveyAnswer): CopyValue[] {
  return [
    sourceId,
    item.id,
    item.question_id,
    item.question,
    item.session,
    item.comment,
    item.dt,
    item.url,
    item.visitor.id,
    JSON.stringify(item),
  ];
}
