import { type Kysely, sql } from 'kysely';

/**
 * The webhook receiver writes the rows a delivery carries through a function of the owner,
 * merge_webhook_rows(), instead of its own INSERT and UPDATE on the data tables: "a webhook never
 * overwrites an API value" is then the database's rule, not only the application's. With UPDATE
 * on feedback the internet-facing role could rewrite any source's API rows by SQL (every e-mail of
 * `visitors`, every comment). Frozen once shipped.
 *
 * The function (SECURITY DEFINER, search_path pinned to the data schema) takes the rows as three
 * JSON arrays (visitors, feedback, survey answers) and
 * - inserts a visitor only when unknown (ON CONFLICT DO NOTHING: the API's copy wins);
 * - inserts an unknown feedback or survey row as origin 'webhook' (webhook_received_at: the row's
 *   received_at, or now), and on a known row only fills the columns still null, turns origin
 *   'api' into 'both', and writes nothing when nothing changes;
 * - removes a visitor it inserted that no row names (the API's row named another visitor);
 * and returns what it wrote: ('visitors', source, id, null, true) per visitor inserted,
 * (table, source, id, feedback_id or question_id, inserted) per row written, and
 * ('removed_visitors', source, id, null, false) per visitor removed again.
 *
 * Roles that store deliveries and do not write the ledger (INSERT on webhook_events, no UPDATE on
 * sync_windows: the receiver) get EXECUTE on it and lose INSERT, UPDATE and DELETE on visitors,
 * feedback and survey_answers, and UPDATE on sources (a new source's row is an INSERT ... ON
 * CONFLICT DO NOTHING).
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

const SIGNATURE = 'merge_webhook_rows(jsonb, jsonb, jsonb)';
const DATA_TABLES = ['visitors', 'feedback', 'survey_answers'];

/** A known row's columns a webhook may fill while they are null, per table. */
const FILLED = {
  feedback: ['question', 'session', 'comment', 'screenshot', 'visitor_id'],
  survey_answers: ['question', 'session', 'comment', 'visitor_id'],
} as const;
const SECOND_KEY = { feedback: 'feedback_id', survey_answers: 'question_id' } as const;

/** The insert of one table's rows from the jsonb array `parameter`: new rows, or nulls filled. */
function mergeRows(table: 'feedback' | 'survey_answers', parameter: string): string {
  const filled = FILLED[table];
  const key2 = SECOND_KEY[table];
  const columns = ['source_id', 'id', key2, ...filled, 'raw'];
  const types: Record<string, string> = { id: 'bigint', [key2]: 'bigint', raw: 'jsonb' };
  const merged = (c: string) => `coalesce(t.${c}, excluded.${c})`;
  const origin = `case when t.origin = 'api' then 'both' else t.origin end`;
  const before = filled.map((c) => `t.${c}`).join(', ');
  const after = filled.map(merged).join(', ');
  return `
    insert into ${table} as t (${columns.join(', ')}, origin, webhook_received_at)
    select ${columns.map((c) => `r.${c}`).join(', ')}, 'webhook', coalesce(r.received_at, now())
    from jsonb_to_recordset(${parameter}) as r(${columns.map((c) => `${c} ${types[c] ?? 'text'}`).join(', ')},
                                               received_at timestamptz)
    on conflict (source_id, id, ${key2}) do update set
      ${filled.map((c) => `${c} = ${merged(c)}`).join(', ')},
      origin = ${origin},
      last_changed_at = case when (${before}) is distinct from (${after}) then now() else t.last_changed_at end
    where (${before}, t.origin) is distinct from (${after}, ${origin})
    returning t.source_id, t.id, t.${key2}, (t.xmax = 0) as was_inserted`;
}

const VISITOR_COLUMNS = [
  'source_id',
  'id',
  'name',
  'company',
  'email',
  'ip',
  'user_agent',
  'landing_page',
  'ref_page',
  'created_at',
  'device',
  'browser',
  'os',
  'raw',
];

const BODY = `
  #variable_conflict use_column
  declare
    new_sources text[];
    new_ids text[];
  begin
    -- Visitors first, then the rows, as the API's load: one lock order, no deadlock.
    with inserted as (
      insert into visitors (${VISITOR_COLUMNS.join(', ')})
      select ${VISITOR_COLUMNS.map((c) => (c === 'raw' ? 'r.raw::jsonb' : `r.${c}`)).join(', ')}
      from jsonb_to_recordset(visitor_rows)
        as r(${VISITOR_COLUMNS.map((c) => `${c} ${c === 'created_at' ? 'timestamptz' : 'text'}`).join(', ')})
      -- DO NOTHING takes no row lock: a visitor the API (or another delivery) loaded stays as it is.
      on conflict (source_id, id) do nothing
      returning source_id, id)
    select coalesce(array_agg(source_id), '{}'), coalesce(array_agg(id), '{}')
      into new_sources, new_ids from inserted;
    return query select 'visitors'::text, s, i, null::bigint, true
      from unnest(new_sources, new_ids) as u(s, i);
    return query
      with f as (${mergeRows('feedback', 'feedback_rows')}),
           a as (${mergeRows('survey_answers', 'survey_rows')})
      select 'feedback'::text, f.source_id, f.id::text, f.feedback_id, f.was_inserted from f
      union all
      select 'survey_answers'::text, a.source_id, a.id::text, a.question_id, a.was_inserted from a;
    -- A visitor inserted here for a row that already named another one (the API's) is an orphan.
    return query
      delete from visitors v using unnest(new_sources, new_ids) as u(s, i)
       where v.source_id = u.s and v.id = u.i and v.observed_at is null
         and not exists (select 1 from feedback f where f.source_id = v.source_id and f.visitor_id = v.id)
         and not exists (select 1 from survey_answers a where a.source_id = v.source_id and a.visitor_id = v.id)
      returning 'removed_visitors'::text, v.source_id, v.id, null::bigint, false;
  end`;

export async function up(db: AnyDb): Promise<void> {
  const { rows } = await sql<{ data: string }>`select current_schema() as data`.execute(db);
  const data = rows[0]?.data;
  if (data === undefined) throw new Error('no current schema: the connection has no search_path');
  const bookkeeping = `${data}_state`;
  const fn = `${quote(bookkeeping)}.${SIGNATURE}`;

  await sql`create function ${sql.id(bookkeeping, 'merge_webhook_rows')}(visitor_rows jsonb, feedback_rows jsonb, survey_rows jsonb)
    returns table (written_table text, source_id text, id text, key2 bigint, inserted boolean)
    language plpgsql security definer set search_path = pg_catalog, ${sql.id(data)} as ${sql.lit(BODY)}`.execute(
    db,
  );
  await sql`comment on function ${sql.raw(fn)} is ${sql.lit(
    "The webhook receiver's only write to the data tables: inserts unknown visitors and rows, fills a known row's null columns, never changes a value already there.",
  )}`.execute(db);
  await sql`revoke all on function ${sql.raw(fn)} from public`.execute(db);

  const receivers = await sql<{ role: string }>`
    select distinct a.grantee::regrole::text as role
      from pg_class c
      join pg_namespace n on n.oid = c.relnamespace
      cross join lateral aclexplode(c.relacl) a
     where n.nspname = ${bookkeeping} and c.relname = 'webhook_events'
       and a.grantee <> 0 and a.grantee <> c.relowner and a.privilege_type = 'INSERT'
       and not exists (
         select 1 from pg_class w join pg_namespace wn on wn.oid = w.relnamespace
           cross join lateral aclexplode(w.relacl) b
          where wn.nspname = ${bookkeeping} and w.relname = 'sync_windows'
            and b.grantee = a.grantee and b.privilege_type = 'UPDATE')`.execute(db);
  for (const { role } of receivers.rows) {
    await sql`grant execute on function ${sql.raw(fn)} to ${sql.raw(role)}`.execute(db);
    for (const table of DATA_TABLES)
      await sql`revoke insert, update, delete on ${sql.id(data, table)} from ${sql.raw(role)}`.execute(db);
    await sql`revoke update on ${sql.id(data, 'sources')} from ${sql.raw(role)}`.execute(db);
  }
}

function quote(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

export async function down(db: AnyDb): Promise<void> {
  const { rows } = await sql<{ data: string }>`select current_schema() as data`.execute(db);
  const data = rows[0]?.data ?? '';
  const bookkeeping = `${data}_state`;
  const fn = `${quote(bookkeeping)}.${SIGNATURE}`;
  const callers = await sql<{ role: string }>`
    select distinct a.grantee::regrole::text as role
      from pg_proc p cross join lateral aclexplode(p.proacl) a
     where p.oid = ${fn}::regprocedure and a.grantee <> 0 and a.grantee <> p.proowner`.execute(db);
  for (const { role } of callers.rows) {
    for (const table of DATA_TABLES)
      await sql`grant insert, update on ${sql.id(data, table)} to ${sql.raw(role)}`.execute(db);
    await sql`grant update on ${sql.id(data, 'sources')} to ${sql.raw(role)}`.execute(db);
  }
  await sql`drop function ${sql.raw(fn)}`.execute(db);
}
