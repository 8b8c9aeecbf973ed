/**
 * What PostgreSQL and a recursive walk can take of a parsed JSON body. JSON.parse accepts both
 * things checked here, so they must be found before the body reaches the database or any
 * recursive code (canonical JSON, zod, jsonb input).
 */

/** Spec 6 bodies nest 2 levels deep; far deeper is no webhook, and recursion must stay bounded. */
export const MAX_JSON_DEPTH = 64;

/** Nesting depth of a parsed JSON value, found without recursion; stops counting past `limit`. */
export function jsonDepth(value: unknown, limit = MAX_JSON_DEPTH): number {
  let deepest = 0;
  const stack: Array<{ value: unknown; depth: number }> = [{ value, depth: 0 }];
  while (stack.length > 0) {
    const { value: current, depth } = stack.pop() as { value: unknown; depth: number };
    if (current === null || typeof current !== 'object') continue;
    const level = depth + 1;
    deepest = Math.max(deepest, level);
    if (level > limit) return level;
    for (const child of Object.values(current)) stack.push({ value: child, depth: level });
  }
  return deepest;
}

/**
 * The path of the first string (value or key) that PostgreSQL cannot store as text or jsonb: one
 * holding U+0000 or a UTF-16 surrogate without its pair. Undefined when there is none. The value
 * must be at most MAX_JSON_DEPTH deep (see jsonDepth).
 */
export function unstorableStringPath(value: unknown, path: string[] = []): string | undefined {
  if (typeof value === 'string') return unstorable(value) ? fieldPath(path) : undefined;
  if (value === null || typeof value !== 'object') return undefined;
  // One path array for the whole walk (every delivery is walked): pushed and popped per key.
  const at = [...path];
  return unstorableIn(value, at);
}

function unstorableIn(value: object, path: string[]): string | undefined {
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    if (unstorable(key)) return fieldPath([...path, key]);
    const child = (value as Record<string, unknown>)[key];
    if (typeof child === 'string') {
      if (unstorable(child)) return fieldPath([...path, key]);
    } else if (child !== null && typeof child === 'object') {
      path.push(key);
      const found = unstorableIn(child, path);
      path.pop();
      if (found !== undefined) return found;
    }
  }
  return undefined;
}

// A high surrogate with no low one after it, or a low surrogate with no high one before it.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function unstorable(text: string): boolean {
  return text.includes('\u0000') || LONE_SURROGATE.test(text);
}

/**
 * Sender-controlled text bound for a text column (the body's `type`, a field path built from its
 * keys): what PostgreSQL cannot store becomes U+FFFD, so the delivery can still be kept.
 */
export function storableText(text: string): string {
  return unstorable(text)
    ? text.replaceAll('\u0000', '\uFFFD').replace(new RegExp(LONE_SURROGATE, 'g'), '\uFFFD')
    : text;
}

/**
 * A field's path as an answer and the error column name it: keys joined by dots, an empty key
 * shown as `""` (a body may hold one; the path must still name a field), `(body)` for the body.
 */
export function fieldPath(path: readonly (string | number | symbol)[]): string {
  if (path.length === 0) return '(body)';
  return storableText(path.map((key) => (key === '' ? '""' : String(key))).join('.'));
}
