import { protectPersonalData } from '../privacy/pii.js';
import type { PiiPolicy } from '../schemas/pii.js';
import { bodyHash } from './body-hash.js';
import { type CheckedBody, checkBody } from './check-body.js';
import { unstorableStringPath } from './json-limits.js';

export interface WebhookSource {
  name: string;
  /** For the `sources` row a delivery references. */
  baseUrl: string;
  /** The source's pii setting: applied to the body before it is stored or merged. */
  pii?: PiiPolicy;
}

/** A delivery checked and keyed, ready to be stored (receive-batch.ts). */
export interface PreparedDelivery {
  checked: CheckedBody;
  base: { sourceId: string; bodyHash: string; type: string | null; body: unknown };
  /** False when a string of the body holds U+0000 or an unpaired surrogate. */
  storable: boolean;
  /** The body's visitor.id as stored (the pseudonym under pii hash and drop), valid body or not. */
  visitorId: string | undefined;
}

export function prepareDelivery(source: WebhookSource, received: unknown): PreparedDelivery {
  const unstorableField = unstorableStringPath(received);
  // Validated as sent; then personal data hashed or dropped before it is stored, keyed or merged.
  const checked = protectPersonalData(checkStorable(checkBody(received), unstorableField), source.pii);
  const body = protectPersonalData(received, source.pii);
  return {
    checked,
    base: { sourceId: source.name, bodyHash: bodyHash(body), type: checked.type, body },
    storable: (body === received ? unstorableField : unstorableStringPath(body)) === undefined,
    visitorId: visitorIdOf(body),
  };
}

/** `visitor.id` of any parsed body, when it is a non-empty string. */
export function visitorIdOf(body: unknown): string | undefined {
  const visitor =
    typeof body === 'object' && body !== null ? (body as { visitor?: unknown }).visitor : undefined;
  const id = typeof visitor === 'object' && visitor !== null ? (visitor as { id?: unknown }).id : undefined;
  return typeof id === 'string' && id !== '' ? id : undefined;
}

/** A body that is valid but holds a string PostgreSQL cannot store is rejected, naming the field. */
export function checkStorable(checked: CheckedBody, field: string | undefined): CheckedBody {
  if (!checked.ok || field === undefined) return checked;
  return {
    ok: false,
    type: checked.type,
    issues: [{ field, message: 'contains U+0000 or an unpaired surrogate, which PostgreSQL cannot store' }],
  };
}
