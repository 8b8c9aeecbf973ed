import * as z from 'zod';
import { timestampSchema } from './timestamp.js';
import { visitorSchema } from './visitor.js';

/**
 * Spec 2.4. Natural key: (id, question_id): one survey response that answers several questions
 * comes back as several items sharing one `id`.
 */
export const surveyAnswerSchema = z.looseObject({
  id: z.int(),
  question_id: z.int(),
  question: z.string(),
  session: z.string(),
  comment: z.string(),
  dt: timestampSchema,
  url: z.string(),
  visitor: visitorSchema,
});

export type SurveyAnswer = z.infer<typeof surveyAnswerSchema>;
