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
