import type { Feedback } from '../../src/schemas/feedback.js';
import type { Recording } from '../../src/schemas/recording.js';
import type { WindowedItem, WindowedResource } from '../../src/schemas/resources.js';
import type { SurveyAnswer } from '../../src/schemas/survey-answer.js';
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

/** A valid survey answer of the day, told apart by its id. */
export function surveyItem(day: DayString, id: number): SurveyAnswer {
  return {
    id,
    question_id: 1,
    question: 'What brought you here?',
    session: `s-${id}`,
    comment: `answer ${id}`,
    dt: `${day}T11:00:${String(id % 60).padStart(2, '0')}.000Z`,
    url: 'https://shop.example.test/',
    visitor: visitor(`v-${id}`),
  };
}

/** A valid recording of the day, told apart by its id. */
export function recordingItem(day: DayString, id: number): Recording {
  return {
    id: `rec-${id}`,
    duration: 30 + id,
    landing_page: 'https://shop.example.test/',
    referral: 'https://search.example.test/',
    country: 'NL',
    city: 'Utrecht',
    user_ip: '192.0.2.1',
    user_agent: 'Mozilla/5.0',
    dt: `${day}T12:00:${String(id % 60).padStart(2, '0')}.000Z`,
    video_link: `https://cdn.example.test/rec-${id}.mp4`,
  };
}

/** A valid item of the resource and day, told apart by its id. */
export function windowedItem<R extends WindowedResource>(
  resource: R,
  day: DayString,
  id: number,
): WindowedItem<R> {
  const items = { feedback: feedbackItem, survey: surveyItem, recordings: recordingItem };
  return items[resource](day, id) as WindowedItem<R>;
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
