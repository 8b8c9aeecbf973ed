import type { z } from 'zod';
import { feedbackSchema } from './feedback.js';
import { recordingSchema } from './recording.js';
import type { WindowedResource } from './resource-names.js';
import { surveyAnswerSchema } from './survey-answer.js';

export {
  ALL_RESOURCES,
  type Resource,
  SNAPSHOT_RESOURCES,
  type SnapshotResource,
  WINDOWED_RESOURCES,
  type WindowedResource,
} from './resource-names.js';

export const windowedItemSchemas = {
  feedback: feedbackSchema,
  survey: surveyAnswerSchema,
  recordings: recordingSchema,
} as const satisfies Record<WindowedResource, z.ZodType>;
