import { type Kysely, sql } from 'kysely';

/**
 * One visitor merge: merge_visitors(), a function of the bookkeeping schema, merges visitor
 * observations into `visitors`, and both writers call it: a window's (merge_window_feedback and
 * merge_window_survey_answers, migration 0041) and the webhooks' (merge_webhook_rows, migrations
 * 0035 and 0042, which receive_webhook_batch calls). Each held its own copy of the statement;
 * now the rule is written once. Frozen once shipped.
 *
 * merge_visitors(sources, visitors, raws, observed), four arrays of one observation each: its
 * source, the visitor's fields (id, name, ... os: the columns), the raw JSON to store, and the dt of
 * the item that carried it (null for a webhook's). Arrays, not one JSON array of rows: a window
 * passes 10,000 visitor objects as they are; built into one jsonb document, they made its
 * visitors' statement three times slower.
 * - per visitor the given row observed most recently; at one observed_at the larger raw in "C"
 *   order (the content decides, not the timing); without observed_at (a webhook's: no dt) the
 *   first given, as if the rows came one after the other;
 * - a row with observed_at is written where the visitor is unknown, or replaces the stored row
 *   where it is more recent (src/load/visitors.ts): in key order, so concurrent writers lock
 *   shared visitors in one order;
 * - a row without it only inserts an unknown visitor (ON CONFLICT DO NOTHING: no row lock, the
 *   API's copy and an earlier delivery's stay as they are);
 * and returns (source_id, id, inserted, changed) per row written (changed: its raw changed).
 * What surrounds the merge stays with each caller: the window's forgotten visitors kept out and
 * contradicted webhook visitors removed, the webhooks' orphans removed.
 *
 * The callers' copies are replaced in their definitions (CREATE OR REPLACE of pg_get_functiondef
 * with the copy swapped for the call): owner, grants, settings and comments stay. The copies are
 * here as 0041 and 0042 wrote them, to find them and for down().
 *
 * - SECURITY INVOKER and search_path pinned as 0041's functions: the window's call writes with the
 *   sync role's rights; merge_webhook_rows (SECURITY DEFINER) calls it as the owner, by its
 *   schema-qualified name (its own search_path is the data schema only).
 * - merge_webhook_rows passes no observed_at, whatever its rows say: a webhook (or a receiver
 *   calling it by hand) never replaces a visitor, as before.
 * - EXECUTE as 0041's: the roles that write the ledger, PUBLIC none.
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

const SIGNATURE = 'merge_visitors(text[], jsonb[], jsonb[], timestamptz[])';
const WINDOW_TABLES = ['feedback', 'survey_answers'] as const;
const WEBHOOK_SIGNATURE = 'merge_webhook_rows(jsonb, jsonb, jsonb)';
const ITEM_TYPES = '(text, date, jsonb, boolean, text, bigint)';

/** The visitors table's columns a merge writes (observed_at: the row's, or null). */
const COLUMNS = [
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
  'observed_at',
];
/** The columns taken from a visitor's fields, with their types. */
const FIELDS =
  'name text, company text, email text, ip text, user_agent text, landing_page text, ref_page text, ' +
  'created_at timestamptz, device text, browser text, os text';

/** `a` (incoming) is a more recent visitor observation than `b` (stored): src/load/visitors.ts. */
const newer = (a: string, b: string) => `(${a}.observed_at is not null and (
      ${b}.observed_at is null or ${a}.observed_at > ${b}.observed_at
      or (${a}.observed_at = ${b}.observed_at and (${a}.raw::text collate "C") > (${b}.raw::text collate "C"))))`;

/** The columns as the inserts select them: the visitor's fields (f) and the observation's own (s). */
const SELECTED = COLUMNS.map((c) =>
  ['source_id', 'id', 'raw', 'observed_at'].includes(c) ? `s.${c}` : `f.${c}`,
).join(', ');

const MERGE_BODY = `
  #variable_conflict use_column
  begin
    return query
    with latest as (
      -- The most recent observation first; of untimed ones the first given, else the larger raw.
      select distinct on (g.source_id, g.visitor ->> 'id') g.source_id, g.visitor ->> 'id' as id, g.visitor, g.raw,
             g.observed_at
        from unnest(p_sources, p_visitors, p_raws, p_observed) with ordinality as g(source_id, visitor, raw, observed_at, n)
       order by g.source_id, g.visitor ->> 'id', g.observed_at desc nulls last,
                case when g.observed_at is null then g.n end, (g.raw::text collate "C") desc
    ), fresh as materialized (
      -- The rows to write, before any is taken apart: an unchanged window's visitors read no further.
      select s.* from latest s
       where s.observed_at is not null
         and not exists (select 1 from visitors v
                          where v.source_id = s.source_id and v.id = s.id and not ${newer('s', 'v')})
    ), timed as (
      insert into visitors as t (${COLUMNS.join(', ')})
      select ${SELECTED} from fresh s, jsonb_to_record(s.visitor) as f(${FIELDS})
       order by s.source_id, s.id
      on conflict (source_id, id) do update set ${COLUMNS.slice(2)
        .map((c) => `${c} = excluded.${c}`)
        .join(', ')},
        last_changed_at = case when t.raw is distinct from excluded.raw then now() else t.last_changed_at end
      where ${newer('excluded', 't')}
      returning t.source_id, t.id, (t.xmax = 0) as inserted, t.last_changed_at = now() as changed
    ), untimed as (
      -- DO NOTHING takes no row lock: a visitor already there stays as it is.
      insert into visitors as t (${COLUMNS.join(', ')})
      select ${SELECTED} from latest s, jsonb_to_record(s.visitor) as f(${FIELDS})
       where s.observed_at is null
       order by s.source_id, s.id
      on conflict (source_id, id) do nothing
      returning t.source_id, t.id, true as inserted, true as changed
    )
    select * from timed union all select * from untimed;
  end`;

/** 0041's visitors' merge of a window's staged items (visitorsMerge), as it wrote it. */
function windowCopy(stage: string): string {
  const updates = COLUMNS.slice(2)
    .map((c) => `${c} = excluded.${c}`)
    .join(', ');
  return `
    with timed as (
      select x.source_id, x.visitor_id, x.dt, x.raw,
             max(x.dt) over (partition by x.source_id, x.visitor_id) as latest_dt
        from ${stage} x
       where x.visitor_id is not null
    ), latest as (
      select distinct on (r.source_id, r.visitor_id) r.source_id, r.visitor_id as id,
             r.raw -> 'visitor' as raw, r.dt as observed_at
        from timed r
       where r.dt is not distinct from r.latest_dt
       order by r.source_id, r.visitor_id, ((r.raw -> 'visitor')::text collate "C") desc
    ), observed as (
      select l.*, f.* from latest l, jsonb_to_record(l.raw) as f(${FIELDS})
    ), written as (
      insert into visitors as t (${COLUMNS.join(', ')})
      select ${COLUMNS.map((c) => `s.${c}`).join(', ')} from observed s
       where not exists (select 1 from visitors v
                          where v.source_id = s.source_id and v.id = s.id and not ${newer('s', 'v')})
       order by s.source_id, s.id
      on conflict (source_id, id) do update set ${updates},
        last_changed_at = case when t.raw is distinct from excluded.raw then now() else t.last_changed_at end
      where ${newer('excluded', 't')}
      returning (xmax = 0) as is_insert, last_changed_at = now() as changed
    )
    select count(*) filter (where is_insert)::int, count(*) filter (where not is_insert and changed)::int
      from written into v_visitors_inserted, v_visitors_updated;`;
}

/**
 * The window's call: its staged items' visitors, each object both the fields and the raw, and only
 * each visitor's items at its latest dt: the function renders what it is given as text to break
 * ties, and rendering a busy visitor's other items too made the visitors' statement of a window
 * of 10,000 items and 400 visitors a third slower.
 */
function windowCall(stage: string): string {
  return `
    select count(*) filter (where m.inserted)::int, count(*) filter (where not m.inserted and m.changed)::int
      into v_visitors_inserted, v_visitors_updated
      from (select array_agg(l.source_id) as sources, array_agg(l.raw -> 'visitor') as visitors,
                   array_agg(l.dt) as observed
              from (select x.source_id, x.raw, x.dt,
                           max(x.dt) over (partition by x.source_id, x.visitor_id) as latest_dt
                      from ${stage} x
                     where x.visitor_id is not null) l
             where l.dt is not distinct from l.latest_dt) v,
           merge_visitors(v.sources, v.visitors, v.visitors, v.observed) m;`;
}

/** 0042's visitors' insert of merge_webhook_rows (its INSERT_VISITORS), as it wrote it. */
function webhookCopy(): string {
  const columns = COLUMNS.filter((c) => c !== 'observed_at');
  return `
    with inserted as (
      insert into visitors (${columns.join(', ')})
      select ${columns.map((c) => (c === 'raw' ? 'r.raw::jsonb' : `r.${c}`)).join(', ')}
      from jsonb_to_recordset(visitor_rows)
        as r(${columns.map((c) => `${c} ${c === 'created_at' ? 'timestamptz' : 'text'}`).join(', ')})
      -- DO NOTHING takes no row lock: a visitor the API (or another delivery) loaded stays as it is.
      on conflict (source_id, id) do nothing
      returning source_id, id)
    select coalesce(array_agg(source_id), '{}'), coalesce(array_agg(id), '{}')
      into new_sources, new_ids from inserted;`;
}

/**
 * The webhooks' call: the rows as given (their fields, their raw: its text, or the delivery's
 * visitor) and no observed_at, whatever a row says (a webhook never replaces a visitor).
 */
function webhookCall(bookkeeping: string): string {
  return `
    select coalesce(array_agg(m.source_id), '{}'), coalesce(array_agg(m.id), '{}')
      into new_sources, new_ids
      from (select array_agg(e.r ->> 'source_id' order by e.n) as sources, array_agg(e.r order by e.n) as visitors,
                   array_agg((e.r ->> 'raw')::jsonb order by e.n) as raws
              from jsonb_array_elements(visitor_rows) with ordinality as e(r, n)) v,
           ${quote(bookkeeping)}.merge_visitors(v.sources, v.visitors, v.raws, null) m;`;
}

interface Swap {
  signature: string;
  copy: string;
  call: string;
}

function swaps(bookkeeping: string): Swap[] {
  return [
    ...WINDOW_TABLES.map((table) => ({
      signature: `${quote(bookkeeping)}.merge_window_${table}${ITEM_TYPES}`,
      copy: windowCopy(`pg_temp.window_${table}`),
      call: windowCall(`pg_temp.window_${table}`),
    })),
    {
      signature: `${quote(bookkeeping)}.${WEBHOOK_SIGNATURE}`,
      copy: webhookCopy(),
      call: webhookCall(bookkeeping),
    },
  ];
}

/** Redefines the function with `from` (found exactly once in its body) replaced by `to`. */
async function replaceInFunction(db: AnyDb, signature: string, from: string, to: string): Promise<void> {
  const { rows } = await sql<{ def: string }>`
    select pg_get_functiondef(${signature}::regprocedure) as def`.execute(db);
  const def = rows[0]?.def ?? '';
  const found = def.split(from).length - 1;
  if (found !== 1)
    throw new Error(`${signature}: the visitors' merge to replace is found ${found} times instead of once`);
  await sql.raw(def.replace(from, () => to)).execute(db);
}

export async function up(db: AnyDb): Promise<void> {
  const { data, bookkeeping } = await schemas(db);
  const fn = `${quote(bookkeeping)}.${SIGNATURE}`;
  await sql`create function ${sql.id(bookkeeping, 'merge_visitors')}(p_sources text[], p_visitors jsonb[], p_raws jsonb[], p_observed timestamptz[])
    returns table (source_id text, id text, inserted boolean, changed boolean)
    language plpgsql security invoker
    set search_path = pg_catalog, ${sql.id(data)}, ${sql.id(bookkeeping)}, pg_temp
    as ${sql.lit(MERGE_BODY)}`.execute(db);
  await sql`comment on function ${sql.raw(fn)} is ${sql.lit(
    "The one visitor merge, with the caller's rights: a window's and the webhooks' visitors, the most recent observation kept (migration 0043).",
  )}`.execute(db);
  // The roles that write the ledger (the sync role), as 0041 finds them; nobody else.
  const writers = await sql<{ role: string }>`
    select distinct a.grantee::regrole::text as role
      from pg_class c
      join pg_namespace n on n.oid = c.relnamespace
      cross join lateral aclexplode(c.relacl) a
     where n.nspname = ${bookkeeping} and c.relname = 'sync_windows'
       and a.grantee <> 0 and a.grantee <> c.relowner and a.privilege_type = 'UPDATE'`.execute(db);
  await sql`revoke all on function ${sql.raw(fn)} from public`.execute(db);
  for (const { role } of writers.rows)
    await sql`grant execute on function ${sql.raw(fn)} to ${sql.raw(role)}`.execute(db);

  for (const { signature, copy, call } of swaps(bookkeeping))
    await replaceInFunction(db, signature, copy, call);
}

export async function down(db: AnyDb): Promise<void> {
  const { bookkeeping } = await schemas(db);
  for (const { signature, copy, call } of swaps(bookkeeping))
    await replaceInFunction(db, signature, call, copy);
  await sql`drop function ${sql.raw(`${quote(bookkeeping)}.${SIGNATURE}`)}`.execute(db);
}

async function schemas(db: AnyDb): Promise<{ data: string; bookkeeping: string }> {
  const { rows } = await sql<{ data: string }>`select current_schema() as data`.execute(db);
  const data = rows[0]?.data;
  if (data === undefined) throw new Error('no current schema: the connection has no search_path');
  return { data, bookkeeping: `${data}_state` };
}

function quote(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
