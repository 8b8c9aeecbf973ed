import * as z from 'zod';
import { timestampSchema } from './timestamp.js';
import { visitorSchema } from './visitor.js';

/** Spec 2.3. Natural key: (id, feedback_id); the spec does not promise `id` alone is unique. */
export const feedbackSchema = z.looseObject({
  id: z.int(),
  feedback_id: z.int(),
  question: z.string(),
  session: z.string(),
  comment: z.string(),
  rating: z.int(),
  rating_text: z.string(),
  dt: timestampSchema,
  url: z.string(),
  screenshot: z.string(),
  visitor: visitorSchema,
});

export type Feedback = z.infer<typeof feedbackSchema>;
