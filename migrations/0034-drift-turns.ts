import { type Kysely, sql } from 'kysely';

/**
 * The turns of the windows that add fields to the inventory (schema_drift, 0027). Frozen once
 * shipped.
 *
 * Windows of one source and resource that insert field paths take turns, one at a time per pair.
 * The turn was a transaction-level advisory lock, which any role of the database may take: an
 * analyst holding the pair's key held up every window carrying an unknown field for as long as it
 * liked. The turn is now the pair's row of this table, locked by the window's upsert until it
 * commits. A row lock needs UPDATE on the table, which only the roles that write the ledger have;
 * nothing a reader can hold (SELECT, ACCESS SHARE, a prepared statement's ROW SHARE or ROW
 * EXCLUSIVE) conflicts with it. No foreign key to sources: its check would share-lock the source's
 * row, which the webhook receiver may update and so hold. Its resources are schema_drift's (0032),
 * by hand: migrations do not import the app.
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

export async function up(db: AnyDb): Promise<void> {
  const { rows } = await sql<{ data: string }>`select current_schema() as data`.execute(db);
  const data = rows[0]?.data;
  if (data === undefined) throw new Error('no current schema: the connection has no search_path');
  const bookkeeping = `${data}_state`;
  // In the bookkeeping schema: its default privileges (docs/roles.sql) apply, an analyst's never do.
  const table = sql.id(bookkeeping, 'schema_drift_turns');
  await sql`create table ${table} (
    source_id text not null,
    resource text not null
      check (resource in ('feedback', 'survey', 'recordings', 'abtesting', 'personalization', 'heatmaps')),
    primary key (source_id, resource)
  )`.execute(db);
  await sql`comment on table ${table} is ${sql.lit(
    "The turns of the loads that add fields to schema_drift: a load inserting field paths for a source and resource locks that pair's row until it commits. No data.",
  )}`.execute(db);
  await sql`comment on column ${sql.id(bookkeeping, 'schema_drift_turns', 'source_id')} is ${sql.lit(
    'The configured source name.',
  )}`.execute(db);
  await sql`comment on column ${sql.id(bookkeeping, 'schema_drift_turns', 'resource')} is ${sql.lit(
    'The resource whose loads take turns: feedback, survey, recordings, abtesting, personalization or heatmaps.',
  )}`.execute(db);
  // Whoever writes the ledger takes turns (also where no default privileges are set).
  const grants = await sql<{ role: string; privilege: string }>`
    select distinct a.grantee::regrole::text as role, a.privilege_type as privilege
      from pg_class c
      join pg_namespace n on n.oid = c.relnamespace
      cross join lateral aclexplode(c.relacl) a
     where n.nspname = ${bookkeeping} and c.relname = 'sync_windows'
       and a.grantee <> 0 and a.grantee <> c.relowner
       and a.privilege_type in ('SELECT', 'INSERT', 'UPDATE')`.execute(db);
  for (const { role, privilege } of grants.rows)
    await sql`grant ${sql.raw(privilege.toLowerCase())} on ${table} to ${sql.raw(role)}`.execute(db);
}

export async function down(db: AnyDb): Promise<void> {
  const { rows } = await sql<{ data: string }>`select current_schema() as data`.execute(db);
  const data = rows[0]?.data;
  if (data === undefined) throw new Error('no current schema: the connection has no search_path');
  await sql`drop table ${sql.id(`${data}_state`, 'schema_drift_turns')}`.execute(db);
}
