import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import type { Database } from '../db/database.js';
import type { WindowedResource } from '../schemas/resources.js';
import type { DayString } from '../time/days.js';
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
 * resource by a lock on the watermark's row: the second committer waits, then sees the first
 * one's day. A row lock rather than an advisory one: only a role that may update the table can
 * take it, so an analyst cannot hold the runs up. The UPDATE only ever moves forward (and a
 * trigger refuses anything else).
 */
export async function advanceWatermark(
  db: Kysely<Database>,
  sourceId: string,
  resource: WindowedResource,
  startDay: DayString,
  today: DayString,
): Promise<DayString | null> {
  // Held until commit, so as few round trips as possible under it: the lock, then one read (a
  // statement of its own, whose snapshot sees what the previous holder committed).
  if (!(await lockRow(db, sourceId, resource))) {
    // The first done day creates the row; start_day is fixed from then on.
    await db
      .insertInto('watermarks')
      .values({ source_id: sourceId, resource, start_day: startDay, day: null })
      .onConflict((oc) => oc.columns(['source_id', 'resource']).doNothing())
      .execute();
    if (!(await lockRow(db, sourceId, resource))) return null;
  }
  const mark = await readWithDoneDays(db, sourceId, resource, today);
  if (mark === undefined) return null;
  const doneDays = new Set(mark.done);
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

/** Locks the watermark's row until commit; false when there is none yet. */
async function lockRow(db: Kysely<Database>, sourceId: string, resource: WindowedResource): Promise<boolean> {
  const rows = await db
    .selectFrom('watermarks')
    .select('day')
    .where('source_id', '=', sourceId)
    .where('resource', '=', resource)
    .forUpdate()
    .execute();
  return rows.length > 0;
}

/** The watermark and the done days after it (before today), in one statement. */
async function readWithDoneDays(
  db: Kysely<Database>,
  sourceId: string,
  resource: WindowedResource,
  today: DayString,
): Promise<(WatermarkState & { done: DayString[] }) | undefined> {
  const row = await db
    .selectFrom('watermarks as w')
    .select([
      'w.start_day',
      'w.day',
      sql<DayString[] | null>`(
        select array_agg(s.day::text) from sync_windows s
        where s.source_id = w.source_id and s.resource = w.resource and s.status = 'done'
          and s.day >= coalesce(w.day, w.start_day) and s.day < ${today}::date)`.as('done'),
    ])
    .where('w.source_id', '=', sourceId)
    .where('w.resource', '=', resource)
    .executeTakeFirst();
  return row === undefined ? undefined : { startDay: row.start_day, day: row.day, done: row.done ?? [] };
}
