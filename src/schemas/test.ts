import * as z from 'zod';
import { timestampSchema } from './timestamp.js';

/** Spec 2.1: an A/B test or a personalization test (both list endpoints share the shape). */
export const testSchema = z.looseObject({
  id: z.string().min(1),
  test_name: z.string(),
  url: z.string(),
  goal_profile_id: z.string(),
  created_at: timestampSchema,
  updated_at: timestampSchema,
});

/** Spec 2.2: one item per variant of a test's detail response. */
export const testResultSchema = z.looseObject({
  variant: z.string().min(1),
  complete: z.int().nonnegative(),
  total: z.int().nonnegative(),
});

export type Test = z.infer<typeof testSchema>;
export type TestResult = z.infer<typeof testResultSchema>;

/** The two kinds of test; also the path segment of their endpoints and the `test_kind` column. */
export const TEST_KINDS = ['abtesting', 'personalization'] as const;
export type TestKind = (typeof TEST_KINDS)[number];
