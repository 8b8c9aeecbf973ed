import { type Kysely, sql } from 'kysely';

/**
 * The webhook receiver stores a batch of deliveries in ONE statement of its own (its own
 * transaction, no BEGIN or COMMIT round trip): receive_webhook_batch(), a function of the
 * bookkeeping schema running with the caller's rights (SECURITY INVOKER, search_path pinned).
 * Frozen once shipped.
 *
 * receive_webhook_batch(deliveries, visitor_rows, feedback_rows, survey_rows), each a JSON array:
 * - takes the suppression list's shared lock (share_suppression_lock(), migration 0020) when a
 *   delivery names a visitor; the next statement, a new snapshot, sees a forget committed before;
 * - stores the deliveries as the receiver's own INSERT did (one row per source and body; a
 *   redelivery counts one more on the stored row; a delivery of a forgotten visitor is not stored);
 * - when every valid delivery was new, merges the rows through merge_webhook_rows() (migration
 *   0035) and returns what both wrote; else it raises SQLSTATE IWB01 and nothing of the batch
 *   stays: the caller stores that batch in a transaction of several statements instead. A row
 *   may name its raw by `raw_delivery` (an index into deliveries): the stored body (the visitor's
 *   row: its `visitor`) is its raw, and the body travels once.
 * It returns ('written_events', source, event id, null, inserted, stored status, stored error,
 * body hash) per stored delivery, then merge_webhook_rows()'s rows (status, error, hash null).
 *
 * merge_webhook_rows() keeps its signature and its answers; it looks for orphan visitors only
 * among those it inserted that no row it inserted names (usually none). That check joined every
 * visitor row against the items: on tables never analysed (autovacuum off) PostgreSQL planned it
 * as a scan of all visitors and of the source's items per new visitor, milliseconds a batch
 * growing with the tables, whether anything was inserted or not.
 *
 * Roles that may call merge_webhook_rows() (the receiver) get EXECUTE on the new function.
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

const MERGE_SIGNATURE = 'merge_webhook_rows(jsonb, jsonb, jsonb)';
const BATCH_SIGNATURE = 'receive_webhook_batch(jsonb, jsonb, jsonb, jsonb)';
/** The SQLSTATE of a batch whose valid deliveries were not all new (nothing of it stays). */
const NOT_ALL_NEW = 'IWB01';

/** A known row's columns a webhook may fill while they are null, per table (as in 0035). */
const FILLED = {
  feedback: ['question', 'session', 'comment', 'screenshot', 'visitor_id'],
  survey_answers: ['question', 'session', 'comment', 'visitor_id'],
} as const;
const SECOND_KEY = { feedback: 'feedback_id', survey_answers: 'question_id' } as const;

/** 0035's insert of one table's rows; `withVisitor`: it also returns the row's visitor_id. */
function mergeRows(table: 'feedback' | 'survey_answers', parameter: string, withVisitor: boolean): string {
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
    returning t.source_id, t.id, t.${key2}, (t.xmax = 0) as was_inserted${withVisitor ? ', t.visitor_id' : ''}`;
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

/** The visitors' insert (0035's). */
const INSERT_VISITORS = `
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
      from unnest(new_sources, new_ids) as u(s, i);`;

/** The orphan visitors' delete (0035's). */
const DELETE_ORPHANS = `
    -- A visitor inserted here for a row that already named another one (the API's) is an orphan.
    return query
      delete from visitors v using unnest(new_sources, new_ids) as u(s, i)
       where v.source_id = u.s and v.id = u.i and v.observed_at is null
         and not exists (select 1 from feedback f where f.source_id = v.source_id and f.visitor_id = v.id)
         and not exists (select 1 from survey_answers a where a.source_id = v.source_id and a.visitor_id = v.id)
      returning 'removed_visitors'::text, v.source_id, v.id, null::bigint, false;`;

/** merge_webhook_rows() as 0035 made it (what down() restores). */
const MERGE_BODY_0035 = `
  #variable_conflict use_column
  declare
    new_sources text[];
    new_ids text[];
  begin${INSERT_VISITORS}
    return query
      with f as (${mergeRows('feedback', 'feedback_rows', false)}),
           a as (${mergeRows('survey_answers', 'survey_rows', false)})
      select 'feedback'::text, f.source_id, f.id::text, f.feedback_id, f.was_inserted from f
      union all
      select 'survey_answers'::text, a.source_id, a.id::text, a.question_id, a.was_inserted from a;${DELETE_ORPHANS}
  end`;

/**
 * merge_webhook_rows() from this migration on: the same rows written and returned, but the
 * orphan check only for visitors inserted here that no row inserted here names (usually none).
 */
const MERGE_BODY = `
  #variable_conflict use_column
  declare
    new_sources text[];
    new_ids text[];
    written_tables text[];
    written_sources text[];
    written_ids text[];
    written_key2s bigint[];
    written_inserted boolean[];
    named_sources text[];
    named_ids text[];
  begin${INSERT_VISITORS}
    with f as (${mergeRows('feedback', 'feedback_rows', true)}),
         a as (${mergeRows('survey_answers', 'survey_rows', true)}),
         w as (select 'feedback'::text as written_table, f.source_id, f.id::text as id, f.feedback_id as key2,
                      f.was_inserted, f.visitor_id from f
               union all
               select 'survey_answers'::text, a.source_id, a.id::text, a.question_id, a.was_inserted, a.visitor_id from a)
    select coalesce(array_agg(w.written_table), '{}'), coalesce(array_agg(w.source_id), '{}'),
           coalesce(array_agg(w.id), '{}'), coalesce(array_agg(w.key2), '{}'),
           coalesce(array_agg(w.was_inserted), '{}'),
           coalesce(array_agg(w.source_id) filter (where w.was_inserted), '{}'),
           coalesce(array_agg(w.visitor_id) filter (where w.was_inserted), '{}')
      into written_tables, written_sources, written_ids, written_key2s, written_inserted, named_sources, named_ids
      from w;
    return query select * from unnest(written_tables, written_sources, written_ids, written_key2s, written_inserted);
    -- A visitor a row inserted here names is no orphan: only the others are looked for.
    select coalesce(array_agg(u.s), '{}'), coalesce(array_agg(u.i), '{}') into new_sources, new_ids
      from unnest(new_sources, new_ids) as u(s, i)
     where not exists (select 1 from unnest(named_sources, named_ids) as n(s, i) where n.s = u.s and n.i = u.i);
    if cardinality(new_ids) = 0 then
      return;
    end if;${DELETE_ORPHANS}
  end`;

/**
 * The rows of `parameter`, each one's raw (the body, or `path` in it) taken from the delivery its
 * `raw_delivery` names (an index into `deliveries`): the body travels once, not twice. A row
 * without it is passed on as it is.
 */
function withRaw(parameter: string, path: string): string {
  return `(select coalesce(jsonb_agg(case when e.r ? 'raw_delivery'
                                      then (e.r - 'raw_delivery')
                                           || jsonb_build_object('raw', deliveries -> ((e.r ->> 'raw_delivery')::int) -> 'body' -> 0${path})
                                      else e.r end order by e.n), '[]'::jsonb)
           from jsonb_array_elements(${parameter}) with ordinality as e(r, n))`;
}

/** The receiver's insert of deliveries (src/load/webhook-events.ts as of this migration). */
const BATCH_BODY = `
  #variable_conflict use_column
  declare
    stored_ids bigint[];
    stored_statuses text[];
    stored_errors text[];
    stored_sources text[];
    stored_hashes text[];
    stored_inserted boolean[];
    stored_new_valid bigint;
    valid bigint;
  begin
    if exists (select 1 from jsonb_to_recordset(deliveries) as d(visitor_id text) where d.visitor_id is not null) then
      perform share_suppression_lock();
    end if;
    -- A statement of its own after the lock: its snapshot sees a forget committed meanwhile.
    with w as (
      insert into webhook_events as e
        (source_id, body_hash, type, status, error, body, body_text, delivery_count, applied_at)
      select r.source_id, r.body_hash, r.type, r.status, r.error, r.body -> 0, r.body_text, r.copies,
             case when r.status = 'applied' then now() end
      from jsonb_to_recordset(deliveries) as r(source_id text, body_hash text, type text, status text,
                                               error text, body jsonb, body_text text, copies integer,
                                               visitor_id text)
      where r.visitor_id is null
         or not exists (select 1 from suppressed_visitors s
                        where s.source_id = r.source_id and s.visitor_id = r.visitor_id)
      -- Key order: concurrent batches lock rows in one order and cannot deadlock.
      order by r.source_id collate "C", r.body_hash collate "C"
      on conflict (source_id, body_hash) do update set
        delivery_count = e.delivery_count + excluded.delivery_count,
        last_received_at = now()
      returning e.id, e.status, e.error, e.source_id, e.body_hash, (e.xmax = 0) as inserted)
    select coalesce(array_agg(w.id), '{}'), coalesce(array_agg(w.status), '{}'),
           coalesce(array_agg(w.error), '{}'), coalesce(array_agg(w.source_id), '{}'),
           coalesce(array_agg(w.body_hash), '{}'), coalesce(array_agg(w.inserted), '{}'),
           count(*) filter (where w.inserted and w.status = 'applied')
      into stored_ids, stored_statuses, stored_errors, stored_sources, stored_hashes, stored_inserted,
           stored_new_valid
      from w;
    select count(*) into valid from jsonb_to_recordset(deliveries) as d(status text) where d.status = 'applied';
    if stored_new_valid <> valid then
      raise exception 'a valid delivery of the batch is not new' using errcode = '${NOT_ALL_NEW}';
    end if;
    return query select 'written_events'::text, u.s, u.i::text, null::bigint, u.ins, u.st, u.er, u.h
      from unnest(stored_sources, stored_ids, stored_inserted, stored_statuses, stored_errors, stored_hashes)
        as u(s, i, ins, st, er, h);
    if jsonb_array_length(visitor_rows) + jsonb_array_length(feedback_rows) + jsonb_array_length(survey_rows) > 0 then
      return query select m.written_table, m.source_id, m.id, m.key2, m.inserted, null::text, null::text, null::text
        from merge_webhook_rows(${withRaw('visitor_rows', " -> 'visitor'")}, ${withRaw('feedback_rows', '')},
                                ${withRaw('survey_rows', '')}) as m;
    end if;
  end`;

export async function up(db: AnyDb): Promise<void> {
  const { data, bookkeeping } = await schemas(db);
  await replaceMerge(db, data, bookkeeping, MERGE_BODY);

  const fn = `${quote(bookkeeping)}.${BATCH_SIGNATURE}`;
  await sql`create function ${sql.id(bookkeeping, 'receive_webhook_batch')}(deliveries jsonb, visitor_rows jsonb, feedback_rows jsonb, survey_rows jsonb)
    returns table (written_table text, source_id text, id text, key2 bigint, inserted boolean,
                   status text, error text, body_hash text)
    language plpgsql security invoker
    set search_path = pg_catalog, ${sql.id(bookkeeping)}, ${sql.id(data)}, pg_temp as ${sql.lit(BATCH_BODY)}`.execute(
    db,
  );
  await sql`comment on function ${sql.raw(fn)} is ${sql.lit(
    "The webhook receiver's batch in one statement, with the caller's rights: stores the deliveries and, when every valid one is new, merges them (merge_webhook_rows); else raises IWB01 and stores nothing.",
  )}`.execute(db);
  await sql`revoke all on function ${sql.raw(fn)} from public`.execute(db);
  for (const role of await callersOfMerge(db, bookkeeping))
    await sql`grant execute on function ${sql.raw(fn)} to ${sql.raw(role)}`.execute(db);
}

export async function down(db: AnyDb): Promise<void> {
  const { data, bookkeeping } = await schemas(db);
  await sql`drop function ${sql.raw(`${quote(bookkeeping)}.${BATCH_SIGNATURE}`)}`.execute(db);
  await replaceMerge(db, data, bookkeeping, MERGE_BODY_0035);
}

async function schemas(db: AnyDb): Promise<{ data: string; bookkeeping: string }> {
  const { rows } = await sql<{ data: string }>`select current_schema() as data`.execute(db);
  const data = rows[0]?.data;
  if (data === undefined) throw new Error('no current schema: the connection has no search_path');
  return { data, bookkeeping: `${data}_state` };
}

/** CREATE OR REPLACE keeps the function's owner, grants and comment. */
async function replaceMerge(db: AnyDb, data: string, bookkeeping: string, body: string): Promise<void> {
  await sql`create or replace function ${sql.id(bookkeeping, 'merge_webhook_rows')}(visitor_rows jsonb, feedback_rows jsonb, survey_rows jsonb)
    returns table (written_table text, source_id text, id text, key2 bigint, inserted boolean)
    language plpgsql security definer set search_path = pg_catalog, ${sql.id(data)} as ${sql.lit(body)}`.execute(
    db,
  );
}

async function callersOfMerge(db: AnyDb, bookkeeping: string): Promise<string[]> {
  const { rows } = await sql<{ role: string }>`
    select distinct a.grantee::regrole::text as role
      from pg_proc p cross join lateral aclexplode(p.proacl) a
     where p.oid = ${`${quote(bookkeeping)}.${MERGE_SIGNATURE}`}::regprocedure
       and a.grantee <> 0 and a.grantee <> p.proowner and a.privilege_type = 'EXECUTE'`.execute(db);
  return rows.map((row) => row.role);
}

function quote(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
