import type { Feedback } from '../schemas/feedback.js';
import type { SurveyAnswer } from '../schemas/survey-answer.js';
import type { FeedbackWebhook, SurveyWebhook } from '../schemas/webhook.js';

export type WebhookKind = 'feedback' | 'survey';

export interface WebhookSendOptions {
  /** Default both. */
  kinds?: WebhookKind[];
  /** Most bodies to send; default all. */
  limit?: number;
  /** Added to every request, e.g. a token the receiver checks (the spec shows no signing). */
  headers?: Record<string, string>;
}

export interface WebhookSendResult {
  sent: number;
  /** HTTP status of each request, in sending order. */
  statuses: number[];
}

/** Spec 6: no rating, rating_text, dt or url in a feedback webhook. */
export function feedbackWebhookBody(item: Feedback): FeedbackWebhook {
  return {
    id: item.id,
    feedback_id: item.feedback_id,
    type: 'feedback',
    question: item.question,
    comment: item.comment,
    session: item.session,
    screenshot: item.screenshot,
    visitor: item.visitor,
  };
}

/** Spec 6: the answer travels in `answer` (the list endpoint calls it `comment`); no dt or url. */
function surveyWebhookBody(item: SurveyAnswer): SurveyWebhook {
  return {
    id: item.id,
    question_id: item.question_id,
    type: 'survey',
    question: item.question,
    answer: item.comment,
    session: item.session,
    visitor: item.visitor,
  };
}

/**
 * POSTs one webhook per item, oldest first across both kinds, one at a time as the service would
 * when items arrive. A network failure rejects; any HTTP status is recorded and sending goes on.
 */
export async function sendWebhooks(
  items: { feedback: readonly Feedback[]; survey: readonly SurveyAnswer[] },
  targetUrl: string,
  options: WebhookSendOptions = {},
): Promise<WebhookSendResult> {
  const kinds = options.kinds ?? ['feedback', 'survey'];
  const queue: Array<{ dt: string; body: FeedbackWebhook | SurveyWebhook }> = [];
  if (kinds.includes('feedback')) {
    for (const item of items.feedback) queue.push({ dt: item.dt, body: feedbackWebhookBody(item) });
  }
  if (kinds.includes('survey')) {
    for (const item of items.survey) queue.push({ dt: item.dt, body: surveyWebhookBody(item) });
  }
  // A stable sort keeps each kind's own order among equal timestamps.
  queue.sort((a, b) => (a.dt < b.dt ? -1 : a.dt > b.dt ? 1 : 0));
  const statuses: number[] = [];
  for (const { body } of queue.slice(0, options.limit ?? queue.length)) {
    const response = await fetch(targetUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...options.headers },
      body: JSON.stringify(body),
    });
    // Reading the body frees the connection for the next request.
    await response.arrayBuffer();
    statuses.push(response.status);
  }
  return { sent: statuses.length, statuses };
}
