import * as z from 'zod';
import { visitorSchema } from './visitor.js';

/** Spec 6: the body the service POSTs when feedback is received (no dt, url, rating). */
export const feedbackWebhookSchema = z.looseObject({
  type: z.literal('feedback'),
  id: z.int(),
  feedback_id: z.int(),
  question: z.string(),
  comment: z.string(),
  session: z.string(),
  screenshot: z.string(),
  visitor: visitorSchema,
});

/** Spec 6: the body for a survey answer; the answer is in `answer`, not `comment`. */
export const surveyWebhookSchema = z.looseObject({
  type: z.literal('survey'),
  id: z.int(),
  question_id: z.int(),
  question: z.string(),
  answer: z.string(),
  session: z.string(),
  visitor: visitorSchema,
});

export const webhookBodySchema = z.discriminatedUnion('type', [feedbackWebhookSchema, surveyWebhookSchema]);

export type FeedbackWebhook = z.infer<typeof feedbackWebhookSchema>;
export type SurveyWebhook = z.infer<typeof surveyWebhookSchema>;
export type WebhookBody = z.infer<typeof webhookBodySchema>;
