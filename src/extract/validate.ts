import type { z } from 'zod';

export interface Rejected {
  item: unknown;
  /** `path: message` for each problem, e.g. `visitor.id: expected string`. */
  error: string;
}

export interface Validated<T> {
  valid: T[];
  rejected: Rejected[];
}

/**
 * API data is untrusted: each item is checked alone, so one bad item never costs its day the
 * good ones. Unknown fields pass through (loose schemas) and reach the raw column.
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
      rejected.push({ item, error: `${poisoned}: a "__proto__" key, which a parsed copy would drop` });
      continue;
    }
    const result = schema.safeParse(item);
    if (result.success) valid.push(result.data);
    else rejected.push({ item, error: describeIssues(result.error) });
  }
  return { valid, rejected };
}

export function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : '(item)'}: ${issue.message}`)
    .join('; ');
}

/**
 * Where an own "__proto__" key sits in a parsed JSON value, if anywhere. JSON.parse keeps it as
 * data, but the schema's output copies known objects by assignment, which turns the key into the
 * copy's prototype: the field would silently vanish from `raw`. Such an item is quarantined
 * verbatim instead (the webhook receiver refuses these bodies too). Iterative: items are untrusted.
 */
function protoKeyPath(value: unknown): string | undefined {
  const stack: Array<{ value: unknown; path: string }> = [{ value, path: '' }];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const current = next.value;
    if (current === null || typeof current !== 'object') continue;
    if (!Array.isArray(current) && Object.hasOwn(current, '__proto__'))
      return next.path === '' ? '(item)' : next.path;
    for (const [key, child] of Object.entries(current))
      stack.push({ value: child, path: next.path === '' ? key : `${next.path}.${key}` });
  }
  return undefined;
}
