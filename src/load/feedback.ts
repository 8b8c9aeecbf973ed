import type { CopyValue } from '../db/copy-text.js';
import type { Feedback } from '../schemas/feedback.js';
import type { UpsertSpec } from './upsert.js';

export const feedbackSpec: UpsertSpec<'feedback'> = {
  table: 'feedback',
  key: ['source_id', 'id', 'feedback_id'],
  columns: [
    'source_id',
    'id',
    'feedback_id',
    'question',
    'session',
    'comment',
    'rating',
    'rating_text',
    'dt',
    'url',
    'screenshot',
    'visitor_id',
    'raw',
  ],
  compare: ['raw'],
  collisions: { resource: 'feedback' },
  // Webhook deliveries write provisional rows into this table too (src/load/webhook-items.ts).
  origin: true,
};

export const feedbackKey = (item: Feedback): string => `${item.id}/${item.feedback_id}`;

export function feedbackRow(sourceId: string, item: Feedback): CopyValue[] {
  return [
    sourceId,
    item.id,
    item.feedback_id,
    item.question,
    item.session,
    item.comment,
    item.rating,
    item.rating_text,
    item.dt,
    item.url,
    item.screenshot,
    item.visitor.id,
    JSON.stringify(item),
  ];
}
