import * as z from 'zod';
import { timestampSchema } from './timestamp.js';

/** Spec 2.6. Embedded in feedback, survey answers and both webhook bodies. */
export const visitorSchema = z.looseObject({
  // The visitor id is the key the warehouse joins on, so an empty one is as bad as a missing one.
  id: z.string().min(1),
  name: z.string(),
  company: z.string(),
  email: z.string(),
  ip: z.string(),
  user_agent: z.string(),
  landing_page: z.string(),
  ref_page: z.string(),
  created_at: timestampSchema,
  device: z.string(),
  browser: z.string(),
  os: z.string(),
});

export type Visitor = z.infer<typeof visitorSchema>;
