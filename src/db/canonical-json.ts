import { createHash } from 'node:crypto';

/** JSON with object keys sorted at every level: equal content gives equal text. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, inner: unknown) => {
    if (inner === null || typeof inner !== 'object' || Array.isArray(inner)) return inner;
    // No prototype: an own "__proto__" key of untrusted JSON stays a plain key.
    const sorted: Record<string, unknown> = Object.create(null);
    for (const key of Object.keys(inner).sort()) sorted[key] = (inner as Record<string, unknown>)[key];
    return sorted;
  });
}

export function contentHash(value: unknown): string {
  return createHash('md5')
    .update(canonicalJson(value) ?? 'undefined')
    .digest('hex');
}
