import * as z from 'zod';
import { timestampSchema } from './timestamp.js';

/** Spec 2.7. `end_time` is null when no end is set. */
export const heatmapSchema = z.looseObject({
  id: z.string().min(1),
  name: z.string(),
  url: z.string(),
  rule: z.string(),
  start_time: timestampSchema,
  end_time: timestampSchema.nullable(),
  heatmap_limit: z.int(),
  created_at: timestampSchema,
  updated_at: timestampSchema,
});

export type Heatmap = z.infer<typeof heatmapSchema>;
