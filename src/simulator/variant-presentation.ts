import type { TestResult } from '../schemas/test.js';
import { type ItemView, withExtras } from './presentation.js';

/**
 * A test's detail response (spec 2.2) as served. With `malformedVariants` the first variant
 * after the control carries `complete` as a string: one bad item inside an otherwise good
 * detail, which a client must reject alone without losing the test's other variants.
 */
export function presentResults(
  results: readonly TestResult[],
  view: ItemView,
): Array<{ item: Record<string, unknown>; malformed: boolean }> {
  const broken = view.malformedVariants ? results.findIndex((result) => result.variant !== 'control') : -1;
  return results.map((result, index) => {
    const dressed: Record<string, unknown> = withExtras(result, view);
    if (index !== broken) return { item: dressed, malformed: false };
    return { item: { ...dressed, complete: String(result.complete) }, malformed: true };
  });
}
