import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import type { Database } from '../db/database.js';
import {
  emptyReading,
  endInclusive,
  type ServerReading,
  serverDay,
  startInclusive,
} from '../extract/server-reading.js';
import type { WindowedResource } from '../schemas/resources.js';

/**
 * What earlier runs learned about a source's server, per windowed resource. Bounds, server day,
 * order, a refused limit and what instants do carry over (they are proved by items, and a run
 * keeps checking them); the cap and the largest response are learned again each run, so a cap the server
 * lowered or raised is seen for what it is now.
 */
export async function readServerReadings(
  db: Kysely<Database>,
  sourceId: string,
): Promise<Map<WindowedResource, ServerReading>> {
  const rows = await db.selectFrom('server_readings').selectAll().where('source_id', '=', sourceId).execute();
  const readings = new Map<WindowedResource, ServerReading>();
  for (const row of rows) {
    readings.set(row.resource, {
      ...emptyReading(),
      headMs: row.head_ms,
      tailMs: row.tail_ms,
      order: row.item_order,
      limitRefused: row.limit_refused,
      instants: row.instants,
    });
  }
  return readings;
}

/**
 * Stores a run's reading; a run that saw no response keeps the stored cap and largest response.
 * With `expected` (the reading this writer last read or stored, null for none), only if what is
 * stored is still that: several workers of a queued run each learn for themselves, and one that
 * never found the reading stale must not put back an old reading over the one another worker
 * re-learned after the server changed (a later worker of the run trusts what is stored). Returns
 * whether it was stored.
 */
export async function saveServerReading(
  db: Kysely<Database>,
  sourceId: string,
  resource: WindowedResource,
  reading: ServerReading,
  expected?: ServerReading | null,
): Promise<boolean> {
  const sawResponse = reading.largestResponse > 0;
  const values = {
    source_id: sourceId,
    resource,
    head_ms: reading.headMs,
    tail_ms: reading.tailMs,
    start_inclusive: startInclusive(reading),
    end_inclusive: endInclusive(reading),
    server_day: serverDay(reading),
    item_order: reading.order,
    cap: reading.cap,
    largest_response: reading.largestResponse,
    limit_refused: reading.limitRefused,
    instants: reading.instants,
  };
  // A source whose windows all failed before writing has no row yet: nothing to attach to.
  const known = await db
    .selectFrom('sources')
    .select('source_id')
    .where('source_id', '=', sourceId)
    .executeTakeFirst();
  if (known === undefined) return false;
  const result = await db
    .insertInto('server_readings')
    .values(values)
    .onConflict((oc) => {
      const update = oc.columns(['source_id', 'resource']).doUpdateSet((eb) => ({
        head_ms: eb.ref('excluded.head_ms'),
        tail_ms: eb.ref('excluded.tail_ms'),
        start_inclusive: eb.ref('excluded.start_inclusive'),
        end_inclusive: eb.ref('excluded.end_inclusive'),
        server_day: eb.ref('excluded.server_day'),
        item_order: eb.ref('excluded.item_order'),
        limit_refused: eb.ref('excluded.limit_refused'),
        instants: eb.ref('excluded.instants'),
        ...(sawResponse
          ? { cap: eb.ref('excluded.cap'), largest_response: eb.ref('excluded.largest_response') }
          : {}),
        updated_at: sql<Date>`now()`,
      }));
      if (expected === undefined) return update;
      // What carries over from run to run (readServerReadings) is what is compared.
      if (expected === null) return update.where(sql<boolean>`false`);
      return update.where(
        sql<boolean>`(server_readings.head_ms, server_readings.tail_ms, server_readings.item_order, server_readings.limit_refused)
          is not distinct from (${expected.headMs}::bigint, ${expected.tailMs}::bigint, ${expected.order}::text, ${expected.limitRefused}::integer)`,
      );
    })
    .executeTakeFirst();
  return (result.numInsertedOrUpdatedRows ?? 0n) > 0n;
}
