import { type Kysely, sql } from 'kysely';

/**
 * Fewer passes over a window in merge_window_<table> (migration 0041, its visitors' call swapped
 * by 0043): the same rows written, the same counts returned, less work for the server. A window
 * of 10,000 feedback items spent about as much in these statements as in writing its rows:
 * - the answer staged in one pass, without materialising the items twice and sorting them by
 *   key, by position and by content: when no key repeats (a hash of the keys tells), a plain
 *   INSERT, and the items kept are those staged, no key in conflict. A repeated key takes the
 *   way that keeps each key's first copy (ON CONFLICT DO NOTHING, in the items' order: ON
 *   CONFLICT costs a window of 10,000 rows about a third more than a plain INSERT) and counts;
 * - the marks of served rows are cleared only if a staged row was already stored: a row this
 *   transaction's upsert inserted carries none, so a window of new rows skips the probe of each;
 * - staged versions are set aside as cross-day losers only if the upsert left one unwritten: a
 *   row it wrote holds the staged version's own dt, never a later day's;
 * - the visitors' counts (distinct visitors, visitors with differing copies) come from the pass
 *   that gathers their latest observations for merge_visitors(), not from a second sort of the
 *   staged rows.
 * - the item upsert's test for an identical stored row also matches its dt (the same raw is the
 *   same dt): a probe bounded by the key, or by the source and the dt, whichever index the planner
 *   takes. On a table never analyzed and still small when a window plans (a first backfill, its
 *   windows planning side by side), the planner took the index on (source_id, dt) for the key's
 *   probe with the source alone as its bound, so each of a window's 10,000 probes read every row
 *   of the source the other windows were writing meanwhile: a window of the load benchmark ran
 *   for minutes (with 0043 as with this migration's other changes).
 * Done as 0043 did: each statement, found exactly once in the function's definition as the earlier
 * migrations wrote it, is replaced in it (CREATE OR REPLACE of pg_get_functiondef): owner, grants,
 * settings and comments stay. The earlier texts are copied here, frozen, to find them and for down().
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

interface WindowTable {
  table: 'feedback' | 'survey_answers' | 'recordings';
  resource: 'feedback' | 'survey' | 'recordings';
  key: readonly string[];
  fields: Readonly<Record<string, string>>;
  webhooks: boolean;
}

const TEXT = 'text';
/** 0041's tables, as it described them. */
const TABLES: readonly WindowTable[] = [
  {
    table: 'feedback',
    resource: 'feedback',
    key: ['id', 'feedback_id'],
    fields: {
      id: 'bigint',
      feedback_id: 'bigint',
      question: TEXT,
      session: TEXT,
      comment: TEXT,
      rating: 'bigint',
      rating_text: TEXT,
      dt: 'timestamptz',
      url: TEXT,
      screenshot: TEXT,
    },
    webhooks: true,
  },
  {
    table: 'survey_answers',
    resource: 'survey',
    key: ['id', 'question_id'],
    fields: {
      id: 'bigint',
      question_id: 'bigint',
      question: TEXT,
      session: TEXT,
      comment: TEXT,
      dt: 'timestamptz',
      url: TEXT,
    },
    webhooks: true,
  },
  {
    table: 'recordings',
    resource: 'recordings',
    key: ['id'],
    fields: {
      id: TEXT,
      duration: 'bigint',
      landing_page: TEXT,
      referral: TEXT,
      country: TEXT,
      city: TEXT,
      user_ip: TEXT,
      user_agent: TEXT,
      dt: 'timestamptz',
      video_link: TEXT,
    },
    webhooks: false,
  },
];

const ITEM_TYPES = '(text, date, jsonb, boolean, text, bigint)';

/** The pieces of 0041's statements this migration finds or rebuilds (its statementsOf). */
function piecesOf(t: WindowTable) {
  const stage = `pg_temp.window_${t.table}`;
  const key = ['source_id', ...t.key];
  const keyList = key.join(', ');
  const columns = [...key, ...Object.keys(t.fields).filter((c) => !t.key.includes(c))]
    .concat(t.webhooks ? ['visitor_id'] : [])
    .concat(['raw']);
  const match = key.map((c) => `t.${c} = s.${c}`).join(' and ');
  const itemKey = (alias: string) => `concat_ws('/', ${t.key.map((c) => `${alias}.${c}`).join(', ')})`;
  const fields = Object.entries(t.fields)
    .map(([c, type]) => `${c} ${type}`)
    .join(', ');
  const fromItem = (c: string) =>
    c === 'source_id' ? 'p_source' : c === 'raw' ? 'e.item' : c === 'visitor_id' ? 'e.visitor_id' : `e.${c}`;
  const stageRows = (source: string) => `
    insert into ${stage} (${columns.join(', ')})
    select ${columns.map(fromItem).join(', ')} from ${source}`;
  const clearServed = `
      update ${t.table} t
         set absent_since = null, missing_upstream_since = null, superseded_by_reject_at = null
        from ${stage} s
       where ${match}
         and (t.absent_since is not null or t.missing_upstream_since is not null or t.superseded_by_reject_at is not null)
         and (t.dt at time zone 'UTC')::date = (s.dt at time zone 'UTC')::date`;
  const losersWhere = `where t.dt is not null and s.dt is not null
         and (t.dt at time zone 'UTC')::date <> (s.dt at time zone 'UTC')::date and t.dt > s.dt`;
  const setAside = (where: string) => `
    with losers as (
      insert into key_collisions (source_id, resource, item_key, dt, raw, run_id)
      select s.source_id, '${t.resource}', ${itemKey('s')}, s.dt, s.raw, p_run_id
        from ${stage} s join ${t.table} t on ${match}
       ${where}
      on conflict do nothing
      returning 1
    ), replaced as (
      update key_collisions set run_id = p_run_id
       where resource = '${t.resource}' and run_id is null
         and xmin::text = (txid_current() % 4294967296)::text
      returning reason
    )
    select (select count(*)::int from losers), (select count(*)::int from replaced where reason = 'collision'),
           (select count(*)::int from replaced where reason = 'moved')`;
  const same = `t.raw is not distinct from s.raw${t.webhooks ? ` and t.origin <> 'webhook'` : ''}`;
  const unchanged = (bound: string) =>
    `where not exists (select 1 from ${t.table} t where ${match}${bound} and ${same})`;
  const suppressed = (alias: string) => `not exists (select 1 from suppressed_visitors v
                          where v.source_id = p_source and v.visitor_id = ${alias}.visitor_id)`;
  const visitorId = t.webhooks ? `, x.item -> 'visitor' ->> 'id' as visitor_id` : '';
  return {
    stage,
    unchanged,
    keyList,
    fields,
    stageRows,
    clearServed,
    losersWhere,
    setAside,
    suppressed,
    visitorId,
  };
}

type Pieces = ReturnType<typeof piecesOf>;

/** 0041's staging statement (stagePart), as it wrote it. */
function stageCopy(t: WindowTable, p: Pieces): string {
  return `
    with e as (
      select x.item, x.n${p.visitorId}, r.*
        from jsonb_array_elements(p_items) with ordinality as x(item, n),
             jsonb_to_record(x.item) as r(${p.fields})
    ), kept as (
      select * from e${
        t.webhooks
          ? `
       where not exists (select 1 from suppressed_visitors v
                          where v.source_id = p_source and v.visitor_id = e.visitor_id)`
          : ''
      }
    ), staged as (${p.stageRows(`(select distinct on (${t.key.join(', ')}) * from kept order by ${t.key.join(', ')}, n) e`)}
      returning 1
    )
    select (select count(*)::int from e), (select count(*)::int from kept), (select count(*)::int from staged),
           (select count(*)::int from (select 1 from kept group by ${t.key.join(', ')}
                                        having count(distinct item) > 1) c)
      into v_items, v_kept, v_staged, v_conflicts;
`;
}

/**
 * The answer staged in one pass. When no key repeats (the usual answer), a plain INSERT: the items
 * kept are those staged and no key has differing copies. Otherwise, in the items' order with ON
 * CONFLICT DO NOTHING, which keeps the first copy of each key as DISTINCT ON (key) ORDER BY key, n
 * did, and counted as before. The staging table's key refuses a repeated key the check missed.
 */
function stageCall(t: WindowTable, p: Pieces): string {
  const items = `(select x.n, x.item${p.visitorId}, r.*
              from jsonb_array_elements(p_items) with ordinality as x(item, n),
                   jsonb_to_record(x.item) as r(${p.fields})) e${t.webhooks ? `\n     where ${p.suppressed('e')}` : ''}`;
  const staging = (tail: string) => `
      with staged as (${p.stageRows(`${items}${tail}`)}
        returning 1
      )
      select count(*)::int into v_staged from staged;`;
  const keys = t.key.map((c) => `(x.item ->> '${c}')::${t.fields[c]}`).join(', ');
  return `
    v_items := coalesce(jsonb_array_length(p_items), 0);
    if exists (select 1 from jsonb_array_elements(p_items) as x(item) group by ${keys} having count(*) > 1) then
      -- In the items' order, each key's first copy (the best: the loader sends it first).${staging(`
     order by e.n
    on conflict (${p.keyList}) do nothing`)}
      with kept as (select * from ${items})
      select (select count(*)::int from kept),
             (select count(*)::int from (select 1 from kept group by ${t.key.join(', ')}
                                          having count(distinct item) > 1) c)
        into v_kept, v_conflicts;
    else${staging('')}
      v_kept := v_staged;
    end if;
`;
}

/** 0043's call of merge_visitors() (windowCall) and 0041's visitors' counts after it, as they wrote them. */
function visitorsCopy(stage: string): string {
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
           merge_visitors(v.sources, v.visitors, v.visitors, v.observed) m;
      select count(distinct x.visitor_id)::int,
             (select count(*)::int from (select 1 from ${stage} y where y.visitor_id is not null
                                          group by y.visitor_id having count(distinct y.raw -> 'visitor') > 1) c)
        into v_visitor_ids, v_visitor_conflicts
        from ${stage} x;`;
}

/**
 * One pass over the staged rows by visitor: each visitor's items at its latest dt for the merge,
 * how many visitors, and which have copies differing from another of theirs.
 */
function visitorsCall(stage: string): string {
  const latest = 'where l.dt is not distinct from l.latest_dt';
  return `
    with l as (
      select x.source_id, x.visitor_id, x.dt, x.visitor,
             max(x.dt) over w as latest_dt, row_number() over w as nth,
             first_value(x.visitor) over w as first_visitor
        -- OFFSET 0: the visitor taken out of each row before the sort, not the whole row sorted.
        from (select y.source_id, y.visitor_id, y.dt, y.raw -> 'visitor' as visitor
                from ${stage} y where y.visitor_id is not null offset 0) x
      window w as (partition by x.source_id, x.visitor_id)
    ), v as (
      select array_agg(l.source_id) filter (${latest}) as sources,
             array_agg(l.visitor) filter (${latest}) as visitors,
             array_agg(l.dt) filter (${latest}) as observed,
             count(*) filter (where l.nth = 1)::int as ids,
             count(distinct l.visitor_id) filter (where l.visitor is distinct from l.first_visitor)::int as conflicts
        from l
    )
    select m.inserted, m.updated, v.ids, v.conflicts
      into v_visitors_inserted, v_visitors_updated, v_visitor_ids, v_visitor_conflicts
      from v, lateral (select count(*) filter (where r.inserted)::int as inserted,
                              count(*) filter (where not r.inserted and r.changed)::int as updated
                         from merge_visitors(v.sources, v.visitors, v.visitors, v.observed) r) m;`;
}

interface Swap {
  signature: string;
  copy: string;
  call: string;
  /** How many times the copy is in the definition (the item upsert is written out three times). */
  times?: number;
}

function swaps(bookkeeping: string): Swap[] {
  return TABLES.flatMap((t) => {
    const p = piecesOf(t);
    const signature = `${quote(bookkeeping)}.merge_window_${t.table}${ITEM_TYPES}`;
    // A row the upsert inserted has no marks: only a staged row stored before can carry one.
    const served = `\n         and v_staged > v_inserted`;
    const own: Swap[] = [
      { signature, copy: stageCopy(t, p), call: stageCall(t, p) },
      {
        signature,
        copy: `if v_staged > 0 then ${p.clearServed}; end if;`,
        call: `if v_staged > v_inserted then ${p.clearServed}; end if;`,
      },
      {
        signature,
        copy: `with cleared as (${p.clearServed}), marked as (`,
        call: `with cleared as (${p.clearServed}${served}), marked as (`,
      },
      {
        signature,
        copy: `${p.setAside(p.losersWhere)} into v_withheld, v_replaced, v_moves;`,
        call: `${p.setAside(`${p.losersWhere}\n         and v_inserted + v_updated < v_staged`)} into v_withheld, v_replaced, v_moves;`,
      },
    ];
    // The item upsert of the answer (both modes) and of the promoted versions.
    own.push({ signature, copy: p.unchanged(''), call: p.unchanged(' and t.dt = s.dt'), times: 3 });
    return t.webhooks
      ? [...own, { signature, copy: visitorsCopy(p.stage), call: visitorsCall(p.stage) }]
      : own;
  });
}

/** Redefines the function with `from` (found exactly `times` times in its body) replaced by `to`. */
async function replaceInFunction(
  db: AnyDb,
  signature: string,
  from: string,
  to: string,
  times = 1,
): Promise<void> {
  const { rows } = await sql<{ def: string }>`
    select pg_get_functiondef(${signature}::regprocedure) as def`.execute(db);
  const def = rows[0]?.def ?? '';
  const found = def.split(from).length - 1;
  if (found !== times)
    throw new Error(`${signature}: the statement to replace is found ${found} times instead of ${times}`);
  await sql.raw(def.replaceAll(from, () => to)).execute(db);
}

export async function up(db: AnyDb): Promise<void> {
  const bookkeeping = await bookkeepingOf(db);
  for (const { signature, copy, call, times } of swaps(bookkeeping))
    await replaceInFunction(db, signature, copy, call, times);
}

export async function down(db: AnyDb): Promise<void> {
  const bookkeeping = await bookkeepingOf(db);
  for (const { signature, copy, call, times } of swaps(bookkeeping).reverse())
    await replaceInFunction(db, signature, call, copy, times);
}

async function bookkeepingOf(db: AnyDb): Promise<string> {
  const { rows } = await sql<{ data: string }>`select current_schema() as data`.execute(db);
  const data = rows[0]?.data;
  if (data === undefined) throw new Error('no current schema: the connection has no search_path');
  return `${data}_state`;
}

function quote(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
