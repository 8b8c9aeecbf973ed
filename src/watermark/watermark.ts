import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import type { Database } from '../db/database.js';
import type { DayString } from '../extract/days.js';
import type { WindowedResource } from '../schemas/resources.js';
import { contiguousWatermark } from './contiguous.js';

export interface WatermarkState {
  startDay: DayString;
  day: DayString | null;
}

/** The current watermark, or null when the resource has never been loaded for this source. */
export async function readWatermark(
  db: Kysely<Database>,
  sourceId: string,
  resource: WindowedResource,
): Promise<WatermarkState | null> {
  const row = await db
    .selectFrom('watermarks')
    .select(['start_day', 'day'])
    .where('source_id', '=', sourceId)
    .where('resource', '=', resource)
    .executeTakeFirst();
  return row === undefined ? null : { startDay: row.start_day, day: row.day };
}

/**
 * Moves the watermark to the end of the contiguous run of done days, inside the caller's
 * transaction. Windows commit concurrently, so the computation is serialised per source and
 * resource by a transaction-scoped advisory lock: the second committer waits, then sees the
 * first one's day. The UPDATE only ever moves forward (and a trigger refuses anything else).
 */
export async function advanceWatermark(
  db: Kysely<Database>,
  sourceId: string,
  resource: WindowedResource,
  startDay: DayString,
  today: DayString,
): Promise<DayString | null> {
  await sql`select pg_advisory_xact_lock(hashtext(${`insights-sync watermark ${sourceId} ${resource}`}))`.execute(
    db,
  );
  // The first done day creates the row; start_day is fixed from then on.
  await db
    .insertInto('watermarks')
    .values({ source_id: sourceId, resource, start_day: startDay, day: null })
    .onConflict((oc) => oc.columns(['source_id', 'resource']).doNothing())
    .execute();
  const mark = await readWatermark(db, sourceId, resource);
  if (mark === null) return null;
  const after = mark.day ?? mark.startDay;
  const done = await db
    .selectFrom('sync_windows')
    .select('day')
    .where('source_id', '=', sourceId)
    .where('resource', '=', resource)
    .where('status', '=', 'done')
    .where('day', '>=', after)
    .where('day', '<', today)
    .execute();
  const doneDays = new Set(done.map((row) => row.day));
  const next = contiguousWatermark(mark.day, mark.startDay, (day) => doneDays.has(day), today);
  if (next !== null && (mark.day === null || next > mark.day)) {
    await db
      .updateTable('watermarks')
      .set({ day: next, updated_at: sql<Date>`now()` })
      .where('source_id', '=', sourceId)
      .where('resource', '=', resource)
      .where((eb) => eb.or([eb('day', 'is', null), eb('day', '<', next)]))
      .execute();
  }
  return next;
}
