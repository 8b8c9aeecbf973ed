import { CompiledQuery } from 'kysely';
import type pg from 'pg';
import { inTransaction, type LoadTransaction } from '../db/transaction.js';
import { ensureSource } from '../load/sources.js';
import {
  type BatchedDeliveryRecord,
  deliveriesParameter,
  type RecordedRow,
  recordDeliveries,
  recordDeliveriesQuery,
  type StoredDelivery,
  setDeliveryOutcome,
  storedDeliveries,
} from '../load/webhook-events.js';
import {
  finishWebhookMerge,
  type MergePrelude,
  mergeStatementText,
  mergeWebhookBodies,
  planWebhookMerge,
  type WebhookMerge,
  type WrittenRow,
} from '../load/webhook-items.js';
import { shareSuppressionLock } from '../privacy/suppression.js';
import type { WebhookBody } from '../schemas/webhook.js';
import { type BodyIssue, type CheckedBody, describeBodyIssues } from './check-body.js';
import { storableText } from './json-limits.js';
import { type PreparedDelivery, prepareDelivery, type WebhookSource } from './prepare-delivery.js';

export interface IncomingDelivery {
  source: WebhookSource;
  body: unknown;
}

/**
 * The answer to one delivery, decided only after the transaction that stored it committed.
 * `suppressed`: the body names a forgotten visitor (src/privacy/suppression.ts); it is
 * acknowledged, so the service stops sending it, but nothing of it is stored (no webhook_events
 * row, hence no event id).
 */
export type DeliveryOutcome =
  | { status: 'applied'; eventId: number; duplicate: boolean; merge?: WebhookMerge }
  | {
      status: 'rejected';
      eventId: number;
      duplicate: boolean;
      issues: BodyIssue[];
      /** When PostgreSQL refused a value: what the log may say of it (never the body's content). */
      databaseRefusal?: DatabaseRefusal;
    }
  | { status: 'suppressed'; eventId: null; duplicate: false };

/** Where PostgreSQL refused a delivery: its SQLSTATE and the object named, never its message. */
export interface DatabaseRefusal {
  code: string | undefined;
  table: string | undefined;
  column: string | undefined;
  constraint: string | undefined;
}

/** A delivery of a forgotten visitor: acknowledged, not stored. */
const SUPPRESSED: DeliveryOutcome = Object.freeze({
  status: 'suppressed',
  eventId: null,
  duplicate: false,
});

/** The copies of one body (same source and hash) in a batch: stored once, answered each. */
interface BodyGroup {
  prepared: PreparedDelivery;
  /** Indexes of the copies in the batch, in arrival order. */
  copies: number[];
}

/**
 * THE path of every delivery, one or many (receive.ts makes a single delivery a batch of one):
 * in ONE transaction it stores the deliveries and merges the valid ones into the tables, in a
 * handful of statements whatever their number (the source rows, the deliveries, the visitors,
 * the feedback rows, the survey rows) and one commit. The answers are those the deliveries would
 * get one after the other in the given order. Resolves only after the commit. Throws when the
 * transaction fails, PostgreSQL refusing one body's value included: nothing of the batch is then
 * stored, and the caller receives each delivery alone (receiveDelivery).
 */
export async function receiveDeliveries(
  pool: pg.Pool,
  deliveries: readonly IncomingDelivery[],
  /**
   * Sources whose row a committed transaction of this process has made sure of: no statement for
   * them (sources rows are never deleted). Those of this batch are added once it commits.
   */
  ensuredSources: Set<string> = new Set(),
): Promise<DeliveryOutcome[]> {
  const groups = groupCopies(deliveries);
  const sources = new Map(deliveries.map(({ source }) => [source.name, source.baseUrl]));

  const outcomes = await inTransaction(pool, async (trx) => {
    const outcomes: DeliveryOutcome[] = new Array(deliveries.length);
    const visitorIds = groups.map(({ prepared }) => suppressionKey(prepared.visitorId));
    // Deliveries of forgotten visitors: acknowledged, nothing of them stored. The list is read by
    // the deliveries' statement, after the writers' shared lock (its own statement, which goes
    // with `begin` in one round trip).
    if (visitorIds.some((id) => id !== null)) await shareSuppressionLock(trx);
    for (const [name, baseUrl] of sources)
      if (!ensuredSources.has(name)) await ensureSource(trx, name, baseUrl);
    const records = groups.map(({ prepared: { checked, base, storable }, copies }, i) => ({
      ...base,
      storable,
      status: checked.ok ? ('applied' as const) : ('rejected' as const),
      error: checked.ok ? null : describeBodyIssues(checked.issues),
      copies: copies.length,
      unlessSuppressed: visitorIds[i] ?? null,
    }));
    const { recorded, merged } = await recordAndMerge(trx, groups, records);

    const toMerge: { group: number; sourceId: string; body: WebhookBody }[] = [];
    groups.forEach(({ prepared: { checked, base }, copies }, group) => {
      const event = recorded[group];
      if (event === undefined) {
        for (const index of copies) outcomes[index] = SUPPRESSED;
        return;
      }
      // The first copy is new when its row was inserted; every later copy is a redelivery.
      copies.forEach((index, n) => {
        outcomes[index] = answerOf(event, checked, n > 0 || !event.inserted);
      });
      if (needsMerge(event, checked)) toMerge.push({ group, sourceId: base.sourceId, body: checked.event });
    });

    // Merged with the deliveries when every valid one was new (the usual case); else here.
    const merges = merged ?? (await mergeWebhookBodies(trx, toMerge));
    for (const [n, { group }] of toMerge.entries()) {
      const event = recorded[group];
      const first = groups[group]?.copies[0];
      const merge = merges[n];
      if (event === undefined || first === undefined || merge === undefined) continue;
      // Rejected before (a database refusal, an older version's rules), valid now.
      if (!event.inserted) await setDeliveryOutcome(trx, event.id, { status: 'applied', error: null });
      outcomes[first] = { status: 'applied', eventId: event.id, duplicate: !event.inserted, merge };
    }
    return outcomes;
  });
  for (const name of sources.keys()) ensuredSources.add(name);
  return outcomes;
}

/** The prelude of the merge's statement: the deliveries' insert (webhook-events.ts), from $1. */
const RECORD_PRELUDE: MergePrelude = {
  name: 'written_events',
  query: recordDeliveriesQuery('$1'),
  parameters: 1,
  columns: [
    { name: 'status', type: 'text' },
    { name: 'error', type: 'text' },
    { name: 'body_hash', type: 'text' },
  ],
  // Every valid delivery was inserted now: then each one is merged, and exactly those. Otherwise
  // (a redelivery, a forgotten visitor) nothing is merged here, and the caller merges those that
  // need it in a statement of their own, as it did before.
  guard: `(select count(*) from written_events w where w.inserted and w.status = 'applied')
          = (select count(*) from jsonb_to_recordset($1::jsonb) as x(status text) where x.status = 'applied')`,
};

/**
 * Stores the deliveries and, in the same statement, merges the valid ones on the bet that each
 * is new: a round trip fewer per batch (each costs both processes a wake-up, on a busy machine
 * as long as the work). `merged` (in the order of the valid groups) when the bet held; when it
 * did not, the statement merged nothing.
 */
async function recordAndMerge(
  trx: LoadTransaction,
  groups: readonly BodyGroup[],
  records: readonly BatchedDeliveryRecord[],
): Promise<{ recorded: (StoredDelivery | undefined)[]; merged?: WebhookMerge[] }> {
  const valid = groups.flatMap(({ prepared: { checked, base } }, group) =>
    checked.ok ? [{ group, sourceId: base.sourceId, body: checked.event }] : [],
  );
  if (valid.length === 0) return { recorded: await recordDeliveries(trx, records) };
  const planned = planWebhookMerge(valid);
  const { rows } = await trx.db.executeQuery<WrittenRow & RecordedRow>(
    CompiledQuery.raw(mergeStatementText(RECORD_PRELUDE), [
      deliveriesParameter(records),
      ...planned.parameters,
    ]),
  );
  const recorded = storedDeliveries(
    records,
    rows.filter((row) => row.table === RECORD_PRELUDE.name),
  );
  const written = rows.filter((row) => row.table !== RECORD_PRELUDE.name);
  const allNew = valid.every(({ group }) => recorded[group]?.inserted === true);
  if (!allNew) {
    if (written.length > 0) throw new Error('the merge wrote rows although a valid delivery was not new');
    return { recorded };
  }
  return { recorded, merged: finishWebhookMerge(planned, written) };
}

/**
 * The answer to one copy of a stored body. A body once applied stays applied: a redelivery of
 * it is answered `applied` whatever this version's rules say now (they are re-run by `webhooks
 * replay`, not by a sender). Otherwise this delivery's own issues are the answer.
 */
function answerOf(event: StoredDelivery, checked: CheckedBody, duplicate: boolean): DeliveryOutcome {
  if (checked.ok || event.status === 'applied') return { status: 'applied', eventId: event.id, duplicate };
  return { status: 'rejected', eventId: event.id, duplicate, issues: checked.issues };
}

/**
 * A valid body is merged when it is new, or was rejected before (a database refusal, an older
 * version's rules); a redelivery of an applied body changes nothing (merging again would be a
 * no-op anyway).
 */
function needsMerge(
  event: StoredDelivery,
  checked: CheckedBody,
): checked is Extract<CheckedBody, { ok: true }> {
  return checked.ok && (event.inserted || event.status !== 'applied');
}

/** The deliveries grouped by source and body, in first-arrival order. */
function groupCopies(deliveries: readonly IncomingDelivery[]): BodyGroup[] {
  const groups = new Map<string, BodyGroup>();
  deliveries.forEach((delivery, index) => {
    const prepared = prepareDelivery(delivery.source, delivery.body);
    const key = `${prepared.base.sourceId}\u0000${prepared.base.bodyHash}`;
    const group = groups.get(key);
    if (group === undefined) groups.set(key, { prepared, copies: [index] });
    else group.copies.push(index);
  });
  return [...groups.values()];
}

/**
 * A visitor id as the suppression list is searched for it: none for an id with U+0000 (no entry
 * can hold one, nor can a parameter); an unpaired surrogate becomes U+FFFD, as the UTF-8 a
 * parameter is sent in makes of it.
 */
function suppressionKey(visitorId: string | undefined): string | null {
  if (visitorId === undefined || visitorId.includes('\u0000')) return null;
  return storableText(visitorId);
}
