import type pg from 'pg';
import { classifyDatabaseError, inTransaction, type LoadTransaction } from '../db/transaction.js';
import { errorMessage } from '../errors.js';
import { ensureSource } from '../load/sources.js';
import { recordDelivery, setDeliveryOutcome } from '../load/webhook-events.js';
import { mergeWebhookBody, type WebhookMerge } from '../load/webhook-items.js';
import { protectPersonalData } from '../privacy/pii.js';
import { suppressedVisitors } from '../privacy/suppression.js';
import type { PiiPolicy } from '../schemas/pii.js';
import { bodyHash } from './body-hash.js';
import { type BodyIssue, type CheckedBody, checkBody, describeBodyIssues } from './check-body.js';
import { unstorableStringPath } from './json-limits.js';

export interface WebhookSource {
  name: string;
  /** For the `sources` row a delivery references. */
  baseUrl: string;
  /** The source's pii setting: applied to the body before it is stored or merged. */
  pii?: PiiPolicy;
}

/**
 * The answer to one delivery, decided only after the transaction that stored it committed.
 * `suppressed`: the body names a forgotten visitor (src/privacy/suppression.ts); it is
 * acknowledged like an applied one, so the service stops sending it, but nothing of it is stored
 * (no webhook_events row: eventId is null).
 */
export type DeliveryOutcome =
  | {
      status: 'applied';
      eventId: number | null;
      duplicate: boolean;
      merge?: WebhookMerge;
      suppressed?: true;
    }
  | { status: 'rejected'; eventId: number; duplicate: boolean; issues: BodyIssue[] };

/** A delivery of a forgotten visitor: acknowledged, not stored. */
export const SUPPRESSED: DeliveryOutcome = Object.freeze({
  status: 'applied',
  eventId: null,
  duplicate: false,
  suppressed: true,
});

/**
 * Receives one parsed JSON body (at most MAX_JSON_DEPTH deep): validates it, then in ONE
 * transaction stores the delivery and, when valid, merges it into the tables. Resolves only
 * after the commit, so whatever it resolves with is stored; it throws when nothing could be
 * stored (the database is unreachable, say), and the caller must then not acknowledge.
 */
export async function receiveDelivery(
  pool: pg.Pool,
  source: WebhookSource,
  body: unknown,
): Promise<DeliveryOutcome> {
  const { checked, base, storable, visitorId } = prepareDelivery(source, body);
  try {
    return await inTransaction(pool, async (trx) => {
      if (visitorId !== undefined && (await suppressedVisitors(trx, source.name, [visitorId])).size > 0)
        return SUPPRESSED;
      await ensureSource(trx, source.name, source.baseUrl);
      const stored = await recordDelivery(trx, {
        ...base,
        storable,
        status: checked.ok ? 'applied' : 'rejected',
        error: checked.ok ? null : describeBodyIssues(checked.issues),
      });
      const duplicate = !stored.inserted;
      if (!checked.ok) {
        // A body once applied stays applied; otherwise this delivery's own issues are the answer.
        return stored.status === 'applied'
          ? { status: 'applied', eventId: stored.id, duplicate }
          : { status: 'rejected', eventId: stored.id, duplicate, issues: checked.issues };
      }
      // A redelivery of an applied body changes nothing (merging again would be a no-op anyway).
      if (duplicate && stored.status === 'applied')
        return { status: 'applied', eventId: stored.id, duplicate };
      const merge = await mergeWebhookBody(trx, source.name, checked.event);
      // Rejected before (a database refusal, an older version's rules), valid now.
      if (duplicate) await setDeliveryOutcome(trx, stored.id, { status: 'applied', error: null });
      return { status: 'applied', eventId: stored.id, duplicate, merge };
    });
  } catch (error) {
    if (!checked.ok || classifyDatabaseError(error) !== 'data') throw error;
    // PostgreSQL refused a value the schema let through (a timestamp in year 0, say): the
    // transaction rolled back, so the delivery is stored again, as rejected, for inspection.
    const issues = [{ field: '(body)', message: `the database refused a value: ${errorMessage(error)}` }];
    return inTransaction(pool, async (trx) => {
      await ensureSource(trx, source.name, source.baseUrl);
      const error = describeBodyIssues(issues);
      const stored = await recordDelivery(trx, { ...base, storable, status: 'rejected', error });
      if (!stored.inserted) await setDeliveryOutcome(trx, stored.id, { status: 'rejected', error });
      return { status: 'rejected', eventId: stored.id, duplicate: !stored.inserted, issues };
    });
  }
}

/**
 * Re-applies a stored body with the rules of this version (`webhooks replay`): the outcome
 * replaces the stored status. Rows an earlier apply wrote are never removed.
 */
export async function reapplyDelivery(
  pool: pg.Pool,
  delivery: { id: number; sourceId: string; body: unknown },
): Promise<{ status: 'applied' | 'rejected'; error: string | null }> {
  const checked = checkStorable(checkBody(delivery.body), unstorableStringPath(delivery.body));
  const visitorId = visitorIdOf(delivery.body);
  const apply = async (trx: LoadTransaction) => {
    if (visitorId !== undefined && (await suppressedVisitors(trx, delivery.sourceId, [visitorId])).size > 0) {
      // Stored before the visitor was forgotten for this source (forget deletes these): not kept.
      await trx.db.deleteFrom('webhook_events').where('id', '=', delivery.id).execute();
      return { status: 'rejected' as const, error: FORGOTTEN };
    }
    if (!checked.ok) {
      const error = describeBodyIssues(checked.issues);
      await setDeliveryOutcome(trx, delivery.id, { status: 'rejected', error });
      return { status: 'rejected' as const, error };
    }
    await mergeWebhookBody(trx, delivery.sourceId, checked.event);
    await setDeliveryOutcome(trx, delivery.id, { status: 'applied', error: null });
    return { status: 'applied' as const, error: null };
  };
  try {
    return await inTransaction(pool, apply);
  } catch (error) {
    if (classifyDatabaseError(error) !== 'data') throw error;
    const message = `(body): the database refused a value: ${errorMessage(error)}`;
    await inTransaction(pool, (trx) =>
      setDeliveryOutcome(trx, delivery.id, { status: 'rejected', error: message }),
    );
    return { status: 'rejected', error: message };
  }
}

/** A delivery checked and keyed, ready to be stored (receiveDelivery, receiveDeliveries). */
export interface PreparedDelivery {
  checked: CheckedBody;
  base: { sourceId: string; bodyHash: string; type: string | null; body: unknown };
  /** False when a string of the body holds U+0000 or an unpaired surrogate. */
  storable: boolean;
  /** The body's visitor.id as stored (the pseudonym under pii hash and drop), valid body or not. */
  visitorId: string | undefined;
}

/** reapplyDelivery's answer for a stored body of a visitor forgotten since. */
const FORGOTTEN = 'the visitor is on the suppression list (forget): the delivery was deleted';

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
function checkStorable(checked: CheckedBody, field: string | undefined): CheckedBody {
  if (!checked.ok || field === undefined) return checked;
  return {
    ok: false,
    type: checked.type,
    issues: [{ field, message: 'contains U+0000 or an unpaired surrogate, which PostgreSQL cannot store' }],
  };
}
