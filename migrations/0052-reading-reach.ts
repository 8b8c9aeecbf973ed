import type { Kysely } from 'kysely';
import { sql } from 'kysely';

/**
 * A server whose day moved by a zone's hours shows the move at one end only: the hours it gave up
 * at the other end hold no item any answer can show. A run that sees such a move asks past the
 * evidence there, and the next reader must ask as far. That reach was stored in head_ms and
 * tail_ms, as if an item had placed it: the next run took items past it for the server moving
 * again, and on a steady server whose sparse bound a run learned better, the stored reading
 * wandered by hours a run. It is stored apart from the evidence.
 * - server_readings.start_reach_ms, end_reach_ms: how far a run's requests reached past the
 *   evidence after a move it saw, in the terms of head_ms and of tail_ms' reach; null where they
 *   did not. Frozen once shipped.
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

const COMMENTS: Record<string, string> = {
  'server_readings.start_reach_ms':
    "The latest a request's interval was taken to start after its startdate midnight, past what head_ms shows, after a run saw the server's day move (a zone's shift shows at one end only): later runs ask as far. Null: as far as head_ms.",
  'server_readings.end_reach_ms':
    "The earliest a request's interval was taken to end after its enddate midnight, short of what tail_ms shows, after a run saw the server's day move: later runs ask as far. Null: as far as tail_ms.",
};

export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .alterTable('server_readings')
    .addColumn('start_reach_ms', 'int8')
    .addColumn('end_reach_ms', 'int8')
    .execute();
  for (const [column, comment] of Object.entries(COMMENTS))
    await sql`comment on column ${sql.ref(column)} is ${sql.lit(comment)}`.execute(db);
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema
    .alterTable('server_readings')
    .dropColumn('end_reach_ms')
    .dropColumn('start_reach_ms')
    .execute();
}
