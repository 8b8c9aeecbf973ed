import pg from 'pg';
import { classifyDatabaseError, inTransaction, type LoadTransaction } from '../db/transaction.js';
import { ensureSource } from '../load/sources.js';
import { recordDelivery, setDeliveryOutcome } from '../load/webhook-events.js';
import { mergeWebhookBody } from '../load/webhook-items.js';
import { suppressedVisitors } from '../privacy/suppression.js';
import { type BodyIssue, checkBody, describeBodyIssues } from './check-body.js';
import { unstorableStringPath } from './json-limits.js';
import {
  checkStorable,
  type PreparedDelivery,
  prepareDelivery,
  visitorIdOf,
  type WebhookSource,
} from './prepare-delivery.js';
import { type DatabaseRefusal, type DeliveryOutcome, receiveDeliveries } from './receive-batch.js';

/**
 * What a delivery PostgreSQL refused is answered and stored with. Never the database's own text:
 * it can quote the body's value and names the tables, columns and constraints behind the receiver.
 */
const DATABASE_REFUSED: BodyIssue = Object.freeze({
  field: '(body)',
  message: 'the database refused a value of this body (one beyond what its column can hold, say)',
});

/**
 * Receives one parsed JSON body (at most MAX_JSON_DEPTH deep) as a batch of one: validated, then
 * stored and, when valid, merged in ONE transaction. Resolves only after the commit, so whatever
 * it resolves with is stored; it throws when nothing could be stored (the database is
 * unreachable, say), and the caller must then not acknowledge. When PostgreSQL refuses a value
 * the schema let through (a timestamp in year 0, say), the transaction rolls back and the
 * delivery is stored again, as rejected, for inspection.
 */
export async function receiveDelivery(
  pool: pg.Pool,
  source: WebhookSource,
  body: unknown,
  ensuredSources?: Set<string>,
): Promise<DeliveryOutcome> {
  try {
    const [outcome] = await receiveDeliveries(pool, [{ source, body }], ensuredSources);
    if (outcome === undefined) throw new Error('a delivery got no outcome');
    return outcome;
  } catch (error) {
    const prepared = prepareDelivery(source, body);
    if (!prepared.checked.ok || classifyDatabaseError(error) !== 'data') throw error;
    return storeRefused(pool, source, prepared, refusalOf(error));
  }
}

async function storeRefused(
  pool: pg.Pool,
  source: WebhookSource,
  { base, storable }: PreparedDelivery,
  databaseRefusal: DatabaseRefusal,
): Promise<DeliveryOutcome> {
  const issues = [DATABASE_REFUSED];
  return inTransaction(pool, async (trx) => {
    await ensureSource(trx, source.name, source.baseUrl);
    const error = describeBodyIssues(issues);
    const stored = await recordDelivery(trx, { ...base, storable, status: 'rejected', error });
    if (!stored.inserted) await setDeliveryOutcome(trx, stored.id, { status: 'rejected', error });
    return { status: 'rejected', eventId: stored.id, duplicate: !stored.inserted, issues, databaseRefusal };
  });
}

/** What of a PostgreSQL refusal may be logged: its SQLSTATE and the object it names. */
function refusalOf(error: unknown): DatabaseRefusal {
  const known = error instanceof pg.DatabaseError ? error : undefined;
  return { code: known?.code, table: known?.table, column: known?.column, constraint: known?.constraint };
}

/**
 * Re-applies a stored body with the rules of this version (`webhooks replay`): the outcome
 * replaces the stored status. Rows an earlier apply wrote are never removed.
 */
export async function reapplyDelivery(
  pool: pg.Pool,
  delivery: { id: number; sourceId: string; body: unknown; receivedAt?: Date },
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
    // A row it creates counts on the day the delivery was received, not the day of the replay.
    await mergeWebhookBody(trx, delivery.sourceId, checked.event, delivery.receivedAt);
    await setDeliveryOutcome(trx, delivery.id, { status: 'applied', error: null });
    return { status: 'applied' as const, error: null };
  };
  try {
    return await inTransaction(pool, apply);
  } catch (error) {
    if (classifyDatabaseError(error) !== 'data') throw error;
    const message = describeBodyIssues([DATABASE_REFUSED]);
    await inTransaction(pool, (trx) =>
      setDeliveryOutcome(trx, delivery.id, { status: 'rejected', error: message }),
    );
    return { status: 'rejected', error: message };
  }
}

/** reapplyDelivery's answer for a stored body of a visitor forgotten since. */
const FORGOTTEN = 'the visitor is on the suppression list (forget): the delivery was deleted';
