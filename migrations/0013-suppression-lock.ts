import { type Kysely, sql } from 'kysely';

/**
 * The suppression list's lock: writers and `forget` agree on one row. Frozen once shipped.
 *
 * It replaces a transaction-level advisory lock, which any role may take: an analyst holding it
 * exclusively kept every sync window and every webhook delivery that names a visitor waiting,
 * with no time limit. A row lock needs UPDATE on the table (the sync and serve roles of
 * docs/roles.sql), and is taken when the statement runs, after privileges are checked: what an
 * analyst can hold on the table (ACCESS SHARE, or ROW EXCLUSIVE through a PREPAREd statement)
 * conflicts with neither FOR KEY SHARE (writers) nor FOR UPDATE (forget).
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

export async function up(db: AnyDb): Promise<void> {
  await sql`create table suppression_lock (id boolean primary key default true check (id))`.execute(db);
  await sql`insert into suppression_lock default values`.execute(db);
  await sql`comment on table suppression_lock is ${sql.lit(
    'The lock of the suppression list (suppressed_visitors): a writer holds its row FOR KEY SHARE while it checks the list and writes, forget and unforget hold it FOR UPDATE. One row, no data.',
  )}`.execute(db);
  await sql`comment on column suppression_lock.id is ${sql.lit('Always true: the table has exactly one row.')}`.execute(
    db,
  );
}

export async function down(db: AnyDb): Promise<void> {
  await sql`drop table suppression_lock`.execute(db);
}
