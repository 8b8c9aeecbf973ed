import type pg from 'pg';
import { inTransaction } from '../db/transaction.js';
import { ensureSource } from '../load/sources.js';
import { recordDeliveries, setDeliveryOutcome } from '../load/webhook-events.js';
import { mergeWebhookBodies } from '../load/webhook-items.js';
import { suppressedVisitors } from '../privacy/suppression.js';
import type { WebhookBody } from '../schemas/webhook.js';
import { describeBodyIssues } from './check-body.js';
import {
  type DeliveryOutcome,
  type PreparedDelivery,
  prepareDelivery,
  SUPPRESSED,
  type WebhookSource,
} from './receive.js';

export interface IncomingDelivery {
  source: WebhookSource;
  body: unknown;
}

/** The copies of one body (same source and hash) in a batch: stored once, answered each. */
interface BodyGroup {
  prepared: PreparedDelivery;
  /** Indexes of the copies in the batch, in arrival order. */
  copies: number[];
}

/**
 * Receives many deliveries in ONE transaction, with the answers receiveDelivery would give them
 * one after the other in the given order, in a handful of statements whatever their number (the
 * source rows, the deliveries, the visitors, the feedback rows, the survey rows) and one commit.
 * Resolves only after the commit. Throws when the transaction fails, PostgreSQL refusing one
 * body's value included: nothing of the batch is then stored, and the caller receives each
 * delivery on its own (src/webhooks/delivery-batcher.ts).
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
  const groups = new Map<string, BodyGroup>();
  deliveries.forEach((delivery, index) => {
    const prepared = prepareDelivery(delivery.source, delivery.body);
    const key = `${prepared.base.sourceId}\u0000${prepared.base.bodyHash}`;
    const group = groups.get(key);
    if (group === undefined) groups.set(key, { prepared, copies: [index] });
    else group.copies.push(index);
  });
  const sources = new Map(deliveries.map(({ source }) => [source.name, source.baseUrl]));

  const outcomes = await inTransaction(pool, async (trx) => {
    const outcomes: DeliveryOutcome[] = new Array(deliveries.length);
    // Deliveries of forgotten visitors: acknowledged, nothing of them stored.
    const bodies: BodyGroup[] = [];
    for (const [sourceId, groupsOfSource] of bySource(groups.values())) {
      const ids = groupsOfSource.flatMap(({ prepared }) => prepared.visitorId ?? []);
      const suppressed = await suppressedVisitors(trx, sourceId, ids);
      for (const group of groupsOfSource) {
        const id = group.prepared.visitorId;
        if (id !== undefined && suppressed.has(id))
          for (const index of group.copies) outcomes[index] = SUPPRESSED;
        else bodies.push(group);
      }
    }
    for (const [name, baseUrl] of sources)
      if (!ensuredSources.has(name)) await ensureSource(trx, name, baseUrl);
    const stored = await recordDeliveries(
      trx,
      bodies.map(({ prepared: { checked, base, storable }, copies }) => ({
        ...base,
        storable,
        status: checked.ok ? 'applied' : 'rejected',
        error: checked.ok ? null : describeBodyIssues(checked.issues),
        copies: copies.length,
      })),
    );

    const toMerge: { group: number; sourceId: string; body: WebhookBody }[] = [];
    bodies.forEach(({ prepared: { checked, base }, copies }, group) => {
      const event = stored[group];
      if (event === undefined) throw new Error('a stored delivery is missing');
      // The first copy is new when its row was inserted; every later copy is a redelivery.
      const answer = (make: (duplicate: boolean) => DeliveryOutcome) =>
        copies.forEach((index, n) => {
          outcomes[index] = make(n > 0 || !event.inserted);
        });
      if (!checked.ok) {
        // A body once applied stays applied; otherwise this delivery's own issues are the answer.
        answer((duplicate) =>
          event.status === 'applied'
            ? { status: 'applied', eventId: event.id, duplicate }
            : { status: 'rejected', eventId: event.id, duplicate, issues: checked.issues },
        );
        return;
      }
      answer((duplicate) => ({ status: 'applied', eventId: event.id, duplicate }));
      // A redelivery of an applied body changes nothing; a new one, or one rejected before, merges.
      if (event.inserted || event.status !== 'applied')
        toMerge.push({ group, sourceId: base.sourceId, body: checked.event });
    });

    const merges = await mergeWebhookBodies(trx, toMerge);
    for (const [n, { group }] of toMerge.entries()) {
      const event = stored[group];
      const first = bodies[group]?.copies[0];
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

/** The groups of each source, in first-arrival order. */
function bySource(groups: Iterable<BodyGroup>): Map<string, BodyGroup[]> {
  const result = new Map<string, BodyGroup[]>();
  for (const group of groups) {
    const sourceId = group.prepared.base.sourceId;
    const ofSource = result.get(sourceId);
    if (ofSource === undefined) result.set(sourceId, [group]);
    else ofSource.push(group);
  }
  return result;
}
