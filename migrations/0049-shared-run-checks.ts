import { type Kysely, sql } from 'kysely';

/**
 * A queued run's workers share the run's checks of a source's server, as the windows of an
 * in-process run share them: whether the source is quiet (src/extract/quiet-mode.ts) and the
 * largest answer the run has seen, below which an answer needs no week-wide request to be told
 * from a silent cap's cut. Each worker asked both for itself: at 4 workers, a queued backfill of
 * 720 windows asked the reading check 96 times and the cap check 104 times, where 1 worker asked
 * 24 and 32.
 *
 * A row now also stands for what is shared before the run's check is made: `checked` says whether
 * it was (rows written before this migration all say so). Shared only while no worker of the run
 * found the reading stale (last_stale_at null): from a stale verdict on, each worker learns the
 * server again from its own answers. Frozen once shipped.
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

const COMMENTS: Record<string, string> = {
  checked:
    "Whether a worker of the run has checked the stored server reading (the others trust it). False: the row shares the run's quiet decision or largest answer before the check was made.",
  quiet:
    'Whether the run asks every day of the resource the widest request (quiet mode), as the first worker to decide it found; false once any worker ended it. Null: undecided. Not heard once the reading was found stale.',
  largest_response:
    'Most items one answer of the run held, over its workers: an answer below it needs no cap check. Not heard once the reading was found stale (each worker learns it again).',
};

export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .alterTable('queue_run_checks')
    .addColumn('checked', 'boolean', (c) => c.notNull().defaultTo(true))
    .addColumn('quiet', 'boolean')
    .addColumn('largest_response', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  for (const [column, comment] of Object.entries(COMMENTS))
    await sql`comment on column ${sql.ref(`queue_run_checks.${column}`)} is ${sql.lit(comment)}`.execute(db);
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema
    .alterTable('queue_run_checks')
    .dropColumn('checked')
    .dropColumn('quiet')
    .dropColumn('largest_response')
    .execute();
}
