import type pg from 'pg';
import { inTransaction } from '../db/transaction.js';
import { ensureSource } from '../load/sources.js';
import { storeNewDeliveries } from '../load/webhook-batch.js';
import {
  type BatchedDeliveryRecord,
  recordDeliveries,
  type StoredDelivery,
  setDeliveryOutcome,
} from '../load/webhook-events.js';
import { mergeWebhookBodies, planWebhookMerge, type WebhookMerge } from '../load/webhook-items.js';
import { shareSuppressionLock } from '../privacy/suppression.js';
import type { WebhookBody } from '../schemas/webhook.js';
import { type BodyIssue, type CheckedBody, describeBodyIssues } from './check-body.js';
import { storableText } from './json-limits.js';
import { type PreparedDelivery, prepareDelivery, type WebhookSource } from './prepare-delivery.js';

export interface IncomingDelivery {
  source: WebhookSource;
  body: unknown;
  /**
   * prepareDelivery(source, body), when the caller made it already: the batcher prepares each
   * delivery as it arrives, while the previous batch is in the database, so a batch does not
   * wait for its bodies to be checked and hashed before it is sent.
   */
  prepared?: PreparedDelivery;
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
 * it stores the deliveries and merges the valid ones into the tables in ONE transaction, in a
 * handful of set-based statements whatever their number. The answers are those the deliveries
 * would get one after the other in the given order. Resolves only after the commit. Throws when
 * the transaction fails, PostgreSQL refusing one body's value included: nothing of the batch is
 * then stored, and the caller receives each delivery alone (receiveDelivery).
 *
 * The usual batch (sources known, every valid delivery new) is one statement, its own
 * transaction (storeNewDeliveries). A batch with a redelivery or a forgotten visitor's valid body,
 * or a source not yet made sure of, is stored in a transaction of a few statements instead.
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
  const records = recordsOf(groups);
  const known = [...sources.keys()].every((name) => ensuredSources.has(name));
  const outcomes =
    (known ? await receiveNew(pool, groups, records) : undefined) ??
    (await receiveInTransaction(pool, groups, records, sources, ensuredSources));
  for (const name of sources.keys()) ensuredSources.add(name);
  return outcomes;
}

/** Each group's delivery as stored: its copies counted, its visitor checked against the list. */
function recordsOf(groups: readonly BodyGroup[]): BatchedDeliveryRecord[] {
  return groups.map(({ prepared: { checked, base, storable, visitorId }, copies }) => ({
    ...base,
    storable,
    status: checked.ok ? ('applied' as const) : ('rejected' as const),
    error: checked.ok ? null : describeBodyIssues(checked.issues),
    copies: copies.length,
    // Deliveries of forgotten visitors: acknowledged, nothing of them stored.
    unlessSuppressed: suppressionKey(visitorId),
  }));
}

/** The batch in one statement, on the bet that every valid delivery is new; undefined when not. */
async function receiveNew(
  pool: pg.Pool,
  groups: readonly BodyGroup[],
  records: readonly BatchedDeliveryRecord[],
): Promise<DeliveryOutcome[] | undefined> {
  const valid = validBodies(groups);
  // A valid body is stored as it was checked (the schemas transform nothing): its row's raw is
  // the stored body, sent once (records and groups share their order).
  const planned =
    valid.length > 0 ? planWebhookMerge(valid.map((v) => ({ ...v, rawFrom: v.group }))) : undefined;
  const stored = await storeNewDeliveries(pool, records, planned);
  if (stored === undefined) return undefined;
  const merges = new Map(valid.map(({ group }, n) => [group, stored.merged[n]]));
  return answers(groups, stored.recorded, merges);
}

/**
 * The batch in one transaction of several statements: the source rows made sure of, the
 * deliveries stored, then only the valid bodies that need it merged (a redelivery of an applied
 * body changes nothing).
 */
async function receiveInTransaction(
  pool: pg.Pool,
  groups: readonly BodyGroup[],
  records: readonly BatchedDeliveryRecord[],
  sources: ReadonlyMap<string, string>,
  ensuredSources: ReadonlySet<string>,
): Promise<DeliveryOutcome[]> {
  return inTransaction(pool, async (trx) => {
    // The list is read by the deliveries' statement, after the writers' shared lock (its own
    // statement, which goes with `begin` in one round trip).
    if (records.some((record) => record.unlessSuppressed !== null)) await shareSuppressionLock(trx);
    for (const [name, baseUrl] of sources)
      if (!ensuredSources.has(name)) await ensureSource(trx, name, baseUrl);
    const recorded = await recordDeliveries(trx, records);
    const toMerge = validBodies(groups).filter(({ group }) => needsMerge(recorded[group]));
    const merged = await mergeWebhookBodies(trx, toMerge);
    const merges = new Map<number, WebhookMerge | undefined>();
    for (const [n, { group }] of toMerge.entries()) {
      const event = recorded[group] as StoredDelivery;
      // Rejected before (a database refusal, an older version's rules), valid now.
      if (!event.inserted) await setDeliveryOutcome(trx, event.id, { status: 'applied', error: null });
      merges.set(group, merged[n]);
    }
    return answers(groups, recorded, merges);
  });
}

/** The valid bodies of the batch, with their group, in first-arrival order. */
function validBodies(groups: readonly BodyGroup[]): { group: number; sourceId: string; body: WebhookBody }[] {
  return groups.flatMap(({ prepared: { checked, base } }, group) =>
    checked.ok ? [{ group, sourceId: base.sourceId, body: checked.event }] : [],
  );
}

/**
 * Each delivery's answer, from what its group's statement stored (undefined: a forgotten
 * visitor's, not stored) and, for a group whose body was merged now, what the merge did: the
 * first copy reports it; every later copy, and a body not merged, is answered from the stored row.
 */
function answers(
  groups: readonly BodyGroup[],
  recorded: readonly (StoredDelivery | undefined)[],
  merges: ReadonlyMap<number, WebhookMerge | undefined>,
): DeliveryOutcome[] {
  const outcomes: DeliveryOutcome[] = [];
  groups.forEach(({ prepared: { checked }, copies }, group) => {
    const event = recorded[group];
    if (event === undefined) {
      for (const index of copies) outcomes[index] = SUPPRESSED;
      return;
    }
    // The first copy is new when its row was inserted; every later copy is a redelivery.
    copies.forEach((index, n) => {
      outcomes[index] = answerOf(event, checked, n > 0 || !event.inserted);
    });
    const merge = merges.get(group);
    const first = copies[0];
    if (merge !== undefined && first !== undefined)
      outcomes[first] = { status: 'applied', eventId: event.id, duplicate: !event.inserted, merge };
  });
  return outcomes;
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
function needsMerge(event: StoredDelivery | undefined): boolean {
  return event !== undefined && (event.inserted || event.status !== 'applied');
}

/** The deliveries grouped by source and body, in first-arrival order. */
function groupCopies(deliveries: readonly IncomingDelivery[]): BodyGroup[] {
  const groups = new Map<string, BodyGroup>();
  deliveries.forEach((delivery, index) => {
    const prepared = delivery.prepared ?? prepareDelivery(delivery.source, delivery.body);
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
