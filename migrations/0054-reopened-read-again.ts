import type { Kysely } from 'kysely';
import { sql } from 'kysely';

/**
 * A day is reopened (sync_windows.reopened_at, read first by the next run) not only when a proof
 * finds the reading it was settled under stale, but also when it was flagged while the server
 * changed how it answers (src/extract/day-plan.ts, readAgain), and when its whole answer lacked
 * rows the same run stored of it (migration 0053). The comments of sync_windows.reopened_at and
 * of day_completeness.reopened_at named the first cause only: an analyst who found a day
 * truncated and reopened read that a proof had found it settled. They now name all three.
 * Comments only. Frozen once shipped.
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

const TABLE_BEFORE =
  'When a proof found the server reading this day was settled under stale: the day is read again first (this run where its budget allows, else the next). Null once a read settles it again.';
const VIEW_BEFORE =
  'When a proof found the server reading this day was settled under stale (it is read again first); null when not reopened.';
const CAUSES =
  'a proof found the server reading it was settled under stale, or it was flagged truncated while the server changed how it answers, or its answer lacked items the same run was served of it by another answer';
const TABLE_AFTER = `When the day was reopened: ${CAUSES}. It is read again first (this run where its budget allows, else the next). Null once a read settles it again.`;
const VIEW_AFTER = `When the day was reopened: ${CAUSES}. It is read again first; null when not reopened.`;

async function comment(db: AnyDb, table: string, view: string): Promise<void> {
  const { rows } = await sql<{ data: string }>`select current_schema() as data`.execute(db);
  const data = rows[0]?.data;
  if (data === undefined) throw new Error('no current schema: the connection has no search_path');
  await sql`comment on column ${sql.ref('sync_windows.reopened_at')} is ${sql.lit(table)}`.execute(db);
  await sql`comment on column ${sql.id(data, 'day_completeness', 'reopened_at')} is ${sql.lit(view)}`.execute(
    db,
  );
}

export async function up(db: AnyDb): Promise<void> {
  await comment(db, TABLE_AFTER, VIEW_AFTER);
}

export async function down(db: AnyDb): Promise<void> {
  await comment(db, TABLE_BEFORE, VIEW_BEFORE);
}
