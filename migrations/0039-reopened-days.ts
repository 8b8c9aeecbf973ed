import { type Kysely, sql } from 'kysely';

/**
 * A day settled under a reading a later proof found stale (src/extract/reading-session.ts) is
 * reopened: it stays done (its rows are there, a watermark may have passed it), but it is read
 * again first, in the same run where its budget allows, else by the next run. `reopened_at` says
 * so, until a read settles the day again. `proved_at` is when a proof of the reading, asked after
 * the day was settled, found the reading still held: the proof the day was settled under. Frozen
 * once shipped.
 *
 * A queued run's workers share their stale verdicts through queue_run_checks.stale_verdicts, so
 * that no worker settles a day under a reading another has proved stale.
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

const COMMENTS: Record<string, string> = {
  reopened_at:
    'When a proof found the server reading this day was settled under stale: the day is read again first (this run where its budget allows, else the next). Null once a read settles it again.',
  proved_at:
    'When a proof of the server reading, asked after this day was settled, found it still held (the proof the day stands on). Null: settled, not yet proved (a run that stopped before its last proof).',
};

const VERDICTS = "Stale verdicts this run's workers found on the source's server reading for the resource.";
const LAST_STALE =
  'When a worker of this run last found the reading stale: a worker that learned its reading before that learns it again and reopens the days it settled since its last proof.';

export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .alterTable('sync_windows')
    .addColumn('reopened_at', 'timestamptz')
    .addColumn('proved_at', 'timestamptz')
    .execute();
  for (const [column, comment] of Object.entries(COMMENTS))
    await sql`comment on column ${sql.ref(`sync_windows.${column}`)} is ${sql.lit(comment)}`.execute(db);
  await db.schema
    .alterTable('queue_run_checks')
    .addColumn('stale_verdicts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('last_stale_at', 'timestamptz')
    .execute();
  await sql`comment on column queue_run_checks.stale_verdicts is ${sql.lit(VERDICTS)}`.execute(db);
  await sql`comment on column queue_run_checks.last_stale_at is ${sql.lit(LAST_STALE)}`.execute(db);
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema
    .alterTable('queue_run_checks')
    .dropColumn('stale_verdicts')
    .dropColumn('last_stale_at')
    .execute();
  await db.schema.alterTable('sync_windows').dropColumn('reopened_at').dropColumn('proved_at').execute();
}
