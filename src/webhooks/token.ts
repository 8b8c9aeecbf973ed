import { hash, timingSafeEqual } from 'node:crypto';

/**
 * Whether a token from a request path equals the source's token, in time that does not depend on
 * where they differ. Both are hashed first: timingSafeEqual needs equal lengths, and comparing
 * digests leaks neither the token's length nor its characters.
 */
export function tokensMatch(expected: string, given: string): boolean {
  return timingSafeEqual(expectedDigest(expected), digest(given));
}

/** The configured tokens' digests (a handful: one per source, and the stand-in for none). */
const expectedDigests = new Map<string, Buffer>();

function expectedDigest(token: string): Buffer {
  let known = expectedDigests.get(token);
  if (known === undefined) {
    known = digest(token);
    expectedDigests.set(token, known);
  }
  return known;
}

function digest(token: string): Buffer {
  return hash('sha256', token, 'buffer');
}
