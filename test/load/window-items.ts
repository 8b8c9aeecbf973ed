import type { Feedback } from '../../src/schemas/feedback.js';
import type { WindowToStore } from '../../src/sync/store-window.js';
import type { DayString } from '../../src/time/days.js';
import { visitor } from '../webhooks/webhook-helpers.js';

/** A valid feedback item of the day, told apart by its id (its content follows from the id and `comment`). */
export function feedbackItem(day: DayString, id: number, comment = `comment ${id}`): Feedback {
  return {
    id,
    feedback_id: 1,
    question: 'How was your visit?',
    session: `s-${id}`,
    comment,
    rating: 4,
    rating_text: 'good',
    dt: `${day}T10:00:${String(id % 60).padStart(2, '0')}.000Z`,
    url: 'https://shop.example.test/',
    screenshot: `https://cdn.example.test/${id}.png`,
    visitor: visitor(`v-${id}`),
  };
}

/**
 * A window of feedback items as the sync gives storeWindow (src/sync/store-window.ts): whole,
 * done, asked with a limit of 1,000; what a test varies is given, the rest as a backfill's.
 */
export function feedbackWindow(window: {
  sourceId: string;
  day: DayString;
  valid: Feedback[];
  startDay: DayString;
  today: DayString;
  baseUrl?: string;
  truncated?: boolean;
  drift?: { total: number };
}): WindowToStore<'feedback'> {
  const { valid, baseUrl = 'http://api.example.test', truncated = false, drift, ...rest } = window;
  return {
    ...rest,
    baseUrl,
    resource: 'feedback',
    status: 'done',
    valid,
    rejected: [],
    requestedLimit: 1000,
    servedCount: valid.length,
    truncated,
    runId: null,
    ...(drift === undefined ? {} : { drift }),
  };
}
