import type * as z from 'zod';
import { feedbackSchema } from './feedback.js';
import { heatmapSchema } from './heatmap.js';
import { recordingSchema } from './recording.js';
import type { Resource, WindowedResource } from './resource-names.js';
import { surveyAnswerSchema } from './survey-answer.js';
import { testSchema } from './test.js';

export {
  ALL_RESOURCES,
  isSnapshot,
  isWindowed,
  type Resource,
  type ResourceTable,
  SNAPSHOT_RESOURCES,
  type SnapshotResource,
  tableOf,
  WINDOWED_RESOURCES,
  type WindowedResource,
} from './resource-names.js';

/** The registry's schemas (src/schemas/resource-names.ts): what one item of each resource's list is. */
export const RESOURCE_SCHEMAS = {
  feedback: feedbackSchema,
  survey: surveyAnswerSchema,
  recordings: recordingSchema,
  abtesting: testSchema,
  personalization: testSchema,
  heatmaps: heatmapSchema,
} as const satisfies Record<Resource, z.ZodType>;

export const windowedItemSchemas: { [R in WindowedResource]: (typeof RESOURCE_SCHEMAS)[R] } =
  RESOURCE_SCHEMAS;

/** The item type of each windowed resource. */
export type WindowedItem<R extends WindowedResource = WindowedResource> = z.output<
  (typeof RESOURCE_SCHEMAS)[R]
>;
