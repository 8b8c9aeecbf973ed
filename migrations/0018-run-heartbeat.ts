import { type Kysely, sql } from 'kysely';

/**
 * A queued run's heartbeat. Frozen once shipped.
 *
 * A queued run's planner holds the run lock only while it plans and enqueues; while its jobs run
 * it waits without it, so that the nightly sync can start (and its jobs go first) while a long
 * backfill is queued. The next run to take the lock marks runs left 'running' as interrupted:
 * a waiting planner's run is not one of them as long as its heartbeat is fresh.
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

export async function up(db: AnyDb): Promise<void> {
  await sql`alter table sync_runs add column heartbeat_at timestamptz`.execute(db);
  await sql`comment on column sync_runs.heartbeat_at is ${sql.lit(
    "A queued run's planner, waiting for its jobs without the run lock, writes this every 5 s; null for a run that held the lock throughout. A 'running' run whose heartbeat is older than 30 s has lost its planner and is marked interrupted by the next run.",
  )}`.execute(db);
}

export async function down(db: AnyDb): Promise<void> {
  await sql`alter table sync_runs drop column heartbeat_at`.execute(db);
}
