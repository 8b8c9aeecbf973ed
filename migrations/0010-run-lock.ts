import { type Kysely, sql } from 'kysely';

/**
 * The run lock: one run at a time per warehouse schema. Frozen once shipped.
 *
 * Every run locks this table (LOCK TABLE ... IN SHARE UPDATE EXCLUSIVE MODE NOWAIT, in a
 * transaction its dedicated connection keeps open; src/db/run-lock.ts). Locking a table in that
 * mode needs UPDATE, DELETE or TRUNCATE on it, which only the sync role of docs/roles.sql has:
 * unlike the advisory lock it replaces, a read-only analyst can neither take it nor hold anything
 * that conflicts with it. The table holds one row and no data: the lock is on the table.
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

export async function up(db: AnyDb): Promise<void> {
  await sql`create table run_lock (id boolean primary key default true check (id))`.execute(db);
  await sql`insert into run_lock default values`.execute(db);
  await sql`comment on table run_lock is ${sql.lit(
    'The run lock: the run in progress (sync, backfill, schedule) holds this table locked in SHARE UPDATE EXCLUSIVE mode for as long as it runs; who holds it is in pg_locks and pg_stat_activity (and in `insights-sync status`). One row, no data.',
  )}`.execute(db);
  await sql`comment on column run_lock.id is ${sql.lit(
    'Always true: the table has exactly one row; the lock is on the table, not on a row.',
  )}`.execute(db);
}

export async function down(db: AnyDb): Promise<void> {
  await sql`drop table run_lock`.execute(db);
}
