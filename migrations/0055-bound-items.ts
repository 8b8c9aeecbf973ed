import type { Kysely } from 'kysely';
import { sql } from 'kysely';

/**
 * A reading's bounds rest on items: the earliest an answer served after its startdate midnight
 * (head_ms) and the latest after its enddate's (tail_ms). A server that moved its day by hours
 * between two runs, capping nearly every day below its size and listing newest first, answers a
 * quiet day cut at the cap, reaching into the day before and hours short of its end, and nothing
 * the new reading serves can show that its end moved. The item the stored end rests on can: once
 * a run has cause to doubt the reading, it asks that item's day again, and the item is missing.
 * That item lived only as long as the run that saw it.
 * - server_readings.head_item_ms, tail_item_ms: the times (ms since the epoch) of the items
 *   head_ms and tail_ms rest on; null where the run that stored the reading had none. Frozen once
 *   shipped.
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

const COMMENTS: Record<string, string> = {
  'server_readings.head_item_ms':
    'The time (ms since the epoch) of the item head_ms rests on, as the run that stored the reading saw it: a later run asks its day again to check that the server still serves it. Null: none known.',
  'server_readings.tail_item_ms':
    'The time (ms since the epoch) of the item tail_ms rests on, as the run that stored the reading saw it: a later run asks its day again to check that the server still serves it. Null: none known.',
};

export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .alterTable('server_readings')
    .addColumn('head_item_ms', 'int8')
    .addColumn('tail_item_ms', 'int8')
    .execute();
  for (const [column, comment] of Object.entries(COMMENTS))
    await sql`comment on column ${sql.ref(column)} is ${sql.lit(comment)}`.execute(db);
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema
    .alterTable('server_readings')
    .dropColumn('tail_item_ms')
    .dropColumn('head_item_ms')
    .execute();
}
