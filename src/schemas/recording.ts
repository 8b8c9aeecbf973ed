import * as z from 'zod';
import { timestampSchema } from './timestamp.js';

/** Spec 2.5. The unit of `duration` is not documented by the service. */
export const recordingSchema = z.looseObject({
  id: z.string().min(1),
  duration: z.int(),
  landing_page: z.string(),
  referral: z.string(),
  country: z.string(),
  city: z.string(),
  user_ip: z.string(),
  user_agent: z.string(),
  dt: timestampSchema,
  video_link: z.string(),
});

export type Recording = z.infer<typeof recordingSchema>;
