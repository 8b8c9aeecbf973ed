import { type Kysely, sql } from 'kysely';

/**
 * The history of what the tool learned about each server. Frozen once shipped.
 *
 * server_readings holds how a source's server reads a resource's requests now (bounds, server
 * day, order, cap, refused limit); a server that changed its reading was learned again, quietly,
 * and the old reading was gone. Each change of a learned field is now one row here: what it was,
 * what it became, when, in which run, and what the server answered that proved it. A field
 * learned for the first time is not a change. A bookkeeping table (no data), beside the ledger.
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

const COMMENTS = {
  '': 'Changes of what the tool learned about a source server (server_readings), one row per changed field. No data.',
  change_id: 'Increasing with each change recorded.',
  source_id: 'The configured source name.',
  resource: 'feedback, survey or recordings.',
  field:
    'What changed: startdate or enddate (inclusive, or exclusive: not proved inclusive), server_day (utc, early, late, unknown), order, cap, limit_refused, instants (honoured, ignored, refused).',
  from_value: 'What was stored before (none: no cap or no refused limit).',
  to_value: 'What is stored now.',
  changed_at: 'When the change was stored.',
  run_id: 'The run (sync_runs.run_id) that stored it.',
  evidence: 'What the server answered that proved it, in a few words.',
} as const;

const FIELDS = ['startdate', 'enddate', 'server_day', 'order', 'cap', 'limit_refused', 'instants'];

export async function up(db: AnyDb): Promise<void> {
  const { rows } = await sql<{ data: string }>`select current_schema() as data`.execute(db);
  const data = rows[0]?.data;
  if (data === undefined) throw new Error('no current schema: the connection has no search_path');
  const bookkeeping = `${data}_state`;
  const table = sql.id(bookkeeping, 'reading_changes');
  await sql`create table ${table} (
    change_id bigint generated always as identity primary key,
    source_id text not null,
    resource text not null check (resource in ('feedback', 'survey', 'recordings')),
    field text not null check (field in (${sql.join(FIELDS.map((f) => sql.lit(f)))})),
    from_value text not null,
    to_value text not null check (to_value <> from_value),
    changed_at timestamptz not null default now(),
    run_id bigint,
    evidence text not null
  )`.execute(db);
  await sql`create index ${sql.id('reading_changes_by_source')} on ${table} (source_id, changed_at)`.execute(
    db,
  );
  for (const [column, text] of Object.entries(COMMENTS)) {
    if (column === '') await sql`comment on table ${table} is ${sql.lit(text)}`.execute(db);
    else
      await sql`comment on column ${sql.id(bookkeeping, 'reading_changes', column)} is ${sql.lit(text)}`.execute(
        db,
      );
  }
  // Whoever may write or read the ledger may write or read the history (also where no default
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
  await sql`drop table ${sql.id(`${data}_state`, 'reading_changes')}`.execute(db);
}
