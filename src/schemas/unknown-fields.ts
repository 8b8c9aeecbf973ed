import * as z from 'zod';
import { TEST_RESULTS_PATH } from './drift-paths.js';

/**
 * The paths of an item's fields its schema does not describe: the schemas are loose, so such a
 * field passes validation and reaches `raw` without a word. The schema's own shape names the
 * known keys, so finding them costs one walk of the item's objects, no second parse. A path is
 * dotted (`visitor.x_new`); `[]` stands for every element of a list.
 */
export function unknownFieldPaths(schema: z.ZodType, item: unknown): string[] {
  // Keys are untrusted: a path is kept to PATH_CHARS, so a huge key cannot outgrow the index.
  const found = new Set<string>();
  walk(schema, item, '', found);
  return [...found];
}

/** How many of the items carry each unknown field path (counted once per item). */
export function countUnknownFields(schema: z.ZodType, items: readonly unknown[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const item of items)
    for (const path of unknownFieldPaths(schema, item)) counts.set(path, (counts.get(path) ?? 0) + 1);
  return counts;
}

/**
 * How many of a snapshot's tests carry each unknown field path, their per-variant results
 * included (under TEST_RESULTS_PATH): a test is one item, its variants part of it, so a path
 * counts once per test as a list's `[]` does. `resultsOf` gives the variants read for a test
 * (none when its detail could not be read).
 */
export function countUnknownTestFields<T>(
  testSchema: z.ZodType,
  resultSchema: z.ZodType,
  tests: readonly T[],
  resultsOf: (test: T) => readonly unknown[],
): Map<string, number> {
  const counts = new Map<string, number>();
  for (const test of tests) {
    const paths = new Set(unknownFieldPaths(testSchema, test));
    for (const result of resultsOf(test))
      for (const path of unknownFieldPaths(resultSchema, result))
        paths.add(cut(`${TEST_RESULTS_PATH}.${path}`));
    for (const path of paths) counts.set(path, (counts.get(path) ?? 0) + 1);
  }
  return counts;
}

/** The longest path kept whole: field names are short; a longer one is cut and ends in '…'. */
export const PATH_CHARS = 200;

function walk(schema: z.ZodType, value: unknown, at: string, found: Set<string>): void {
  const inner = unwrap(schema);
  if (inner instanceof z.ZodArray && Array.isArray(value)) {
    for (const element of value) walk(inner.element as z.ZodType, element, `${at}[]`, found);
    return;
  }
  if (!(inner instanceof z.ZodObject) || value === null || typeof value !== 'object' || Array.isArray(value))
    return;
  const shape = inner.shape as Record<string, z.ZodType>;
  for (const [key, child] of Object.entries(value)) {
    const path = at === '' ? key : `${at}.${key}`;
    const known = Object.hasOwn(shape, key) ? shape[key] : undefined;
    if (known === undefined) found.add(cut(path));
    else walk(known, child, path, found);
  }
}

function cut(path: string): string {
  return path.length <= PATH_CHARS ? path : `${path.slice(0, PATH_CHARS - 1)}…`;
}

/** The schema inside optional, nullable and default wrappers: the one that describes the value. */
function unwrap(schema: z.ZodType): z.ZodType {
  let current = schema;
  while (
    current instanceof z.ZodOptional ||
    current instanceof z.ZodNullable ||
    current instanceof z.ZodDefault
  )
    current = current.unwrap() as z.ZodType;
  return current;
}
