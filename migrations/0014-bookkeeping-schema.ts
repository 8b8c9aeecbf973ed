import { type Kysely, sql } from 'kysely';

/**
 * The bookkeeping tables move to a schema of their own: `<schema>_state` beside the data
 * schema `<schema>`, so that Metabase, dbt and `\dt` list data only. Frozen once shipped.
 *
 * The migrator's own tables have moved already (src/db/migrator.ts: Kysely reads them before any
 * migration runs), and with them the schema exists. A table keeps its grants, indexes, sequences,
 * triggers and comments when it changes schema, and the views of the data schema that read it
 * (sync_health) follow it: a view refers to a table, not to its name.
 *
 * USAGE on the new schema goes to the roles that write a bookkeeping table (the sync and serve
 * roles of docs/roles.sql), not to those that only read: an analyst who could SELECT sync_windows
 * in the data schema no longer finds it, and reads sync_health instead.
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

const MOVED = [
  'sync_runs',
  'sync_windows',
  'watermarks',
  'rejects',
  'webhook_events',
  'server_readings',
  'suppressed_visitors',
  'run_lock',
  'suppression_lock',
];

async function schemas(db: AnyDb): Promise<{ data: string; bookkeeping: string }> {
  const { rows } = await sql<{ data: string }>`select current_schema() as data`.execute(db);
  const data = rows[0]?.data;
  if (data === undefined) throw new Error('no current schema: the connection has no search_path');
  return { data, bookkeeping: `${data}_state` };
}

export async function up(db: AnyDb): Promise<void> {
  const { data, bookkeeping } = await schemas(db);
  for (const table of MOVED)
    await sql`alter table ${sql.id(data, table)} set schema ${sql.id(bookkeeping)}`.execute(db);
  await sql`comment on schema ${sql.id(bookkeeping)} is ${sql.lit(
    `insights-sync's own tables for the warehouse in schema ${data}: runs, the ledger of day windows, watermarks, rejected items, stored webhook deliveries, what it learned about the server, the suppression list, its locks and migrations. Analysts read sync_health in ${data} instead.`,
  )}`.execute(db);
  const writers = await sql<{ role: string }>`
    select distinct a.grantee::regrole::text as role
      from pg_class c
      join pg_namespace n on n.oid = c.relnamespace
      cross join lateral aclexplode(c.relacl) a
     where n.nspname = ${bookkeeping} and a.grantee <> 0 and a.grantee <> c.relowner
       and a.privilege_type in ('INSERT', 'UPDATE', 'DELETE')`.execute(db);
  for (const { role } of writers.rows)
    await sql`grant usage on schema ${sql.id(bookkeeping)} to ${sql.raw(role)}`.execute(db);
}

export async function down(db: AnyDb): Promise<void> {
  const { data, bookkeeping } = await schemas(db);
  for (const table of MOVED)
    await sql`alter table ${sql.id(bookkeeping, table)} set schema ${sql.id(data)}`.execute(db);
}
