import type * as z from 'zod';
import type { Rejected } from '../schemas/rejected.js';
import {
  formatPath,
  type ItemProblem,
  unstorableFields,
  unstorableJson,
  valueAt,
} from '../schemas/storable.js';

export interface Validated<T> {
  valid: T[];
  rejected: Rejected[];
}

/**
 * API data is untrusted: each item is checked alone, so one bad item never costs its day the
 * good ones. Unknown fields pass through (loose schemas) and reach the raw column.
 *
 * An item is rejected, with every problem it has, when it fails its schema or holds a value the
 * warehouse cannot store (storable.ts): the day's transaction then never meets it.
 */
export function validateItems<S extends z.ZodType>(
  schema: S,
  items: readonly unknown[],
): Validated<z.output<S>> {
  const valid: z.output<S>[] = [];
  const rejected: Rejected[] = [];
  for (const item of items) {
    const poisoned = protoKeyPath(item);
    if (poisoned !== undefined) {
      rejected.push(
        rejection(item, [
          {
            key: `${poisoned}: a "__proto__" key`,
            message: `${poisoned}: a "__proto__" key, which a parsed copy would drop`,
          },
        ]),
      );
      continue;
    }
    const unstorable = unstorableJson(item);
    const result = schema.safeParse(item);
    if (!result.success) {
      rejected.push(rejection(item, [...schemaProblems(result.error, item), ...unstorable]));
      continue;
    }
    const problems = [...unstorable, ...unstorableFields(schema, result.data)];
    if (problems.length === 0) valid.push(result.data);
    else rejected.push(rejection(item, problems));
  }
  return { valid, rejected };
}

function rejection(item: unknown, problems: readonly ItemProblem[]): Rejected {
  return {
    item,
    error: problems.map((p) => p.message).join('; '),
    problems: [...new Set(problems.map((p) => p.key))],
  };
}

/**
 * zod's messages name no values, so they are the problems' keys too. One is made precise: an
 * integer beyond 2^53 - 1, which z.int() refuses because JSON.parse no longer reads it exactly
 * (every integer column is bigint, migration 0009, so nothing smaller is refused).
 */
function schemaProblems(error: z.ZodError, item: unknown): ItemProblem[] {
  return error.issues.map((issue) => {
    const where = formatPath(issue.path);
    const key = `${where}: ${issue.message}`;
    if ((issue.code === 'too_big' || issue.code === 'too_small') && issue.origin === 'int') {
      const value = valueAt(item, issue.path);
      if (typeof value === 'number' && Math.abs(value) > Number.MAX_SAFE_INTEGER) {
        const bound =
          issue.code === 'too_big'
            ? 'above 9007199254740991 (2^53 - 1)'
            : 'below -9007199254740991 (-(2^53 - 1))';
        return {
          key,
          message: `${where}: ${value} is ${bound}, beyond which a JSON number is not read exactly`,
        };
      }
    }
    return { key, message: key };
  });
}

/**
 * Where an own "__proto__" key sits in a parsed JSON value, if anywhere. JSON.parse keeps it as
 * data, but the schema's output copies known objects by assignment, which turns the key into the
 * copy's prototype: the field would silently vanish from `raw`. Such an item is quarantined
 * verbatim instead (the webhook receiver refuses these bodies too). Iterative: items are untrusted.
 */
function protoKeyPath(value: unknown): string | undefined {
  // Each entry links to its parent: paths are built only for the one found, so a deep item
  // costs linear time, not a copied path per level.
  interface Visit {
    value: unknown;
    key?: string;
    parent?: Visit;
  }
  const stack: Visit[] = [{ value }];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const current = next.value;
    if (current === null || typeof current !== 'object') continue;
    if (!Array.isArray(current) && Object.hasOwn(current, '__proto__')) {
      const path: string[] = [];
      for (let at: Visit | undefined = next; at?.key !== undefined; at = at.parent) path.unshift(at.key);
      return formatPath(path);
    }
    for (const [key, child] of Object.entries(current)) stack.push({ value: child, key, parent: next });
  }
  return undefined;
}
