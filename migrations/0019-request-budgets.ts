import { type Kysely, sql } from 'kysely';

/**
 * The requests-per-second budget of a source, held by the database so that it
 * holds across every process and machine. Frozen once shipped.
 *
 * One row per source that has a budget: `next_at`, the earliest time its next request may start.
 * Each request reserves its start with one atomic upsert that moves `next_at` on by 1/rps seconds
 * (src/sync/request-budget.ts), then waits for it. Like the queue's tables it is bookkeeping: it
 * goes to `<schema>_state`, writable by the roles that write the ledger.
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

export async function up(db: AnyDb): Promise<void> {
  await sql`create table request_budgets (
    source_id text primary key,
    next_at timestamptz not null
  )`.execute(db);
  await sql`comment on table request_budgets is ${sql.lit(
    "Requests-per-second budgets (INSIGHTS_SOURCE_RPS, a source's requests_per_second): one row per source that has one, shared by every process that requests from it. Each request reserves its start by moving next_at on by 1/rps seconds, then waits until then. No data.",
  )}`.execute(db);
  for (const [column, text] of [
    ['source_id', 'The source.'],
    ['next_at', "The earliest start the source's next request may reserve."],
  ] as const)
    await sql`comment on column ${sql.ref(`request_budgets.${column}`)} is ${sql.lit(text)}`.execute(db);

  const { rows } = await sql<{ data: string }>`select current_schema() as data`.execute(db);
  const data = rows[0]?.data;
  if (data === undefined) throw new Error('no current schema: the connection has no search_path');
  const bookkeeping = `${data}_state`;
  const writers = await sql<{ role: string }>`
    select distinct a.grantee::regrole::text as role
      from pg_class c
      join pg_namespace n on n.oid = c.relnamespace
      cross join lateral aclexplode(c.relacl) a
     where n.nspname = ${bookkeeping} and c.relname = 'sync_windows'
       and a.grantee <> 0 and a.grantee <> c.relowner and a.privilege_type = 'UPDATE'`.execute(db);
  await sql`alter table ${sql.id(data, 'request_budgets')} set schema ${sql.id(bookkeeping)}`.execute(db);
  for (const { role } of writers.rows)
    await sql`grant select, insert, update, delete on ${sql.id(bookkeeping, 'request_budgets')} to ${sql.raw(role)}`.execute(
      db,
    );
}

export async function down(db: AnyDb): Promise<void> {
  await sql`drop table request_budgets`.execute(db);
}
