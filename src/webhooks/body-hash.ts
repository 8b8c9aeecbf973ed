import { hash } from 'node:crypto';
import { canonicalJson } from '../db/canonical-json.js';

/**
 * The dedupe key of a delivery: sha256 of the body's canonical JSON (keys sorted at every level).
 * The spec gives a delivery no id, so a redelivery is recognised by its content: the same body
 * sent twice, whatever its key order or whitespace, is one stored event.
 */
export function bodyHash(body: unknown): string {
  // One call, no Hash object: thousands of deliveries a second are keyed.
  return hash('sha256', canonicalJson(body) ?? 'undefined', 'hex');
}
