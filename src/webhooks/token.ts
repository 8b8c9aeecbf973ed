import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * Whether a token from a request path equals the source's token, in time that does not depend on
 * where they differ. Both are hashed first: timingSafeEqual needs equal lengths, and comparing
 * digests leaks neither the token's length nor its characters.
 */
export function tokensMatch(expected: string, given: string): boolean {
  return timingSafeEqual(digest(expected), digest(given));
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}
