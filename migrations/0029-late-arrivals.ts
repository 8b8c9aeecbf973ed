import { type Kysely, sql } from 'kysely';

/**
 * How late data arrives. Frozen once shipped.
 *
 * INSIGHTS_LOOKBACK_DAYS decides how many days a sync reads again for items that arrive late, and
 * nothing measured whether it is right. A run now records, per source, resource and age of the
 * day (the run's UTC day minus the item's), how many items it found new on days the ledger already
 * held as done: the items earlier reads did not get. `status` shows their spread and the lookback
 * that would have caught 99.9 % of them. A bookkeeping table (no data), beside the ledger.
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

const COMMENTS = {
  '': 'Items a run found new on days already loaded whole (late arrivals), per run, source, resource and age of the day. No data.',
  run_id: 'The run (sync_runs.run_id) that found them.',
  source_id: 'The configured source name.',
  resource: 'feedback, survey or recordings.',
  day_age: 'The run day (UTC) minus the day the items belong to, in days: 1 is yesterday.',
  items: 'How many items of such days the run stored that the warehouse did not hold.',
  recorded_at: 'When the run recorded them.',
} as const;

export async function up(db: AnyDb): Promise<void> {
  const { rows } = await sql<{ data: string }>`select current_schema() as data`.execute(db);
  const data = rows[0]?.data;
  if (data === undefined) throw new Error('no current schema: the connection has no search_path');
  const bookkeeping = `${data}_state`;
  const table = sql.id(bookkeeping, 'late_arrivals');
  await sql`create table ${table} (
    run_id bigint not null,
    source_id text not null,
    resource text not null check (resource in ('feedback', 'survey', 'recordings')),
    day_age integer not null check (day_age >= 0),
    items integer not null check (items > 0),
    recorded_at timestamptz not null default now(),
    primary key (run_id, source_id, resource, day_age)
  )`.execute(db);
  await sql`create index ${sql.id('late_arrivals_recent')} on ${table} (recorded_at)`.execute(db);
  for (const [column, text] of Object.entries(COMMENTS)) {
    if (column === '') await sql`comment on table ${table} is ${sql.lit(text)}`.execute(db);
    else
      await sql`comment on column ${sql.id(bookkeeping, 'late_arrivals', column)} is ${sql.lit(text)}`.execute(
        db,
      );
  }
  // Whoever may write or read the ledger may write or read these counts (also where no default
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
  await sql`drop table ${sql.id(`${data}_state`, 'late_arrivals')}`.execute(db);
}
