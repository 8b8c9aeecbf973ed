import { type Kysely, sql } from 'kysely';

/**
 * The inventory of fields the API sends that the spec does not describe. Frozen once shipped.
 *
 * A newer service version may add fields: items still validate (the schemas are loose) and the
 * new keys are kept in `raw`, but nothing said so. Each window's load now counts, per source and
 * resource, the items with a key its schema does not know, and keeps one row per field path: when
 * it was first and last seen, and in how many of the items of the last run that saw it. A
 * bookkeeping table (no data), beside the ledger, with its grants.
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

const COMMENTS = {
  '': 'Fields the API sent that the spec does not describe (kept in the raw column of their rows), one row per source, resource and field path, updated by the load of each window. No data.',
  source_id: 'The configured source name.',
  resource: 'The resource whose items carry the field: feedback, survey or recordings.',
  field_path:
    'Where the field sits in an item, e.g. x_extra or visitor.x_new; [] stands for the elements of a list.',
  first_seen_at: 'When a load first met the field.',
  first_seen_day:
    'The earliest UTC day of a loaded window whose items carried the field (a backfill of older days may move it back).',
  last_seen_at: 'When a load last met the field.',
  last_run_id: 'The run (sync_runs.run_id) that last met the field; null for a load outside a run.',
  last_run_items: 'How many items of that run carried the field.',
  last_run_total:
    'How many items that run loaded for the source and resource: last_run_items / last_run_total is the share of its items that carried the field.',
} as const;

export async function up(db: AnyDb): Promise<void> {
  const { rows } = await sql<{ data: string }>`select current_schema() as data`.execute(db);
  const data = rows[0]?.data;
  if (data === undefined) throw new Error('no current schema: the connection has no search_path');
  const bookkeeping = `${data}_state`;
  // Made in the bookkeeping schema itself: its default privileges (docs/roles.sql) apply, and the
  // data schema's (an analyst's SELECT) never do.
  const table = sql.id(bookkeeping, 'schema_drift');
  await sql`create table ${table} (
    source_id text not null,
    resource text not null check (resource in ('feedback', 'survey', 'recordings')),
    field_path text not null,
    first_seen_at timestamptz not null,
    first_seen_day date not null,
    last_seen_at timestamptz not null,
    last_run_id bigint,
    last_run_items integer not null check (last_run_items >= 0),
    last_run_total integer not null check (last_run_total >= last_run_items),
    primary key (source_id, resource, field_path)
  )`.execute(db);
  for (const [column, text] of Object.entries(COMMENTS)) {
    if (column === '') await sql`comment on table ${table} is ${sql.lit(text)}`.execute(db);
    else
      await sql`comment on column ${sql.id(bookkeeping, 'schema_drift', column)} is ${sql.lit(text)}`.execute(
        db,
      );
  }
  // Whoever may write or read the ledger may write or read the inventory (also where no default
  // privileges are set).
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
  await sql`drop table ${sql.id(`${data}_state`, 'schema_drift')}`.execute(db);
}
