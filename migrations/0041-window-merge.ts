import { type Kysely, sql } from 'kysely';

/**
 * A window's write in one statement: store_window(), a function of the bookkeeping schema, takes
 * the day's validated items as one jsonb array (and its rejects, its ledger row) and does in the
 * caller's transaction what the loader did in 15 statements, each a round trip and a parse and
 * plan on both sides: the items' upsert (cross-day collisions set aside), the webhook visitors the
 * API contradicts removed, the marks of a whole day's absent items and the promotion of the
 * versions other days serve, the visitors' merge, the rejects (a forgotten visitor's left out),
 * the marks of rows a rejected newer version supersedes, the ledger row (its truncated flag never
 * cleared by a read holding fewer items), what the run's proofs found, and the watermark. Frozen
 * once shipped: a change of the merge is a migration that replaces the function.
 *
 * - SECURITY INVOKER: it writes with the caller's rights, so it lets no role do what it could not
 *   do by SQL; the sync role (UPDATE on sync_windows) gets EXECUTE, nobody else (PUBLIC loses it:
 *   an analyst cannot run it, and could not write through it anyway).
 * - search_path pinned to pg_catalog, the data schema, the bookkeeping schema, then pg_temp: a
 *   caller's search_path cannot put another table or function in place of the ones meant, and its
 *   staging tables are named pg_temp.window_<table>.
 * - The window's planner settings (work_mem, no hash or merge joins: see the loader) are the
 *   function's own, set for its call only.
 * - The staging table of each table (a temporary table of the connection, emptied at commit) is
 *   created by the first call on a connection, then reused: its plans stay cached with the
 *   function's.
 *
 * One function per windowed table does the items (merge_window_<table>), store_window the rest.
 * The items are given best copy first: of several copies of one key, the first one whose visitor
 * is not forgotten is stored (the loader orders them as it always chose: the canonical JSON that
 * sorts last).
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

interface WindowTable {
  table: 'feedback' | 'survey_answers' | 'recordings';
  /** The resource's name in key_collisions and sync_windows. */
  resource: 'feedback' | 'survey' | 'recordings';
  /** The key without source_id, and the item's fields the row takes, with their column types. */
  key: readonly string[];
  fields: Readonly<Record<string, string>>;
  /** Rows record whether a webhook or the API wrote them (origin), and carry a visitor. */
  webhooks: boolean;
}

const TEXT = 'text';
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

const VISITOR_FIELDS =
  'name text, company text, email text, ip text, user_agent text, landing_page text, ref_page text, ' +
  'created_at timestamptz, device text, browser text, os text';
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
  'observed_at',
];

/** Row `alias` has dt on the UTC day p_day (a range, so an index on dt serves it). */
const onDay = (alias: string) =>
  `${alias}.dt >= (p_day::timestamp at time zone 'UTC') and ${alias}.dt < ((p_day + 1)::timestamp at time zone 'UTC')`;

/** `a` (incoming or staged) is a more recent visitor observation than `b` (stored): src/load/visitors.ts. */
const newer = (a: string, b: string) => `(${a}.observed_at is not null and (
      ${b}.observed_at is null or ${a}.observed_at > ${b}.observed_at
      or (${a}.observed_at = ${b}.observed_at and (${a}.raw::text collate "C") > (${b}.raw::text collate "C"))))`;

/** The statements of one table's merge, as the loader wrote them (src/load/upsert.ts, moved-items.ts). */
function statementsOf(t: WindowTable) {
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
  const same = (stored: string, incoming: string) =>
    `${stored}.raw is not distinct from ${incoming}.raw${t.webhooks ? ` and ${stored}.origin <> 'webhook'` : ''}`;
  const updates = columns
    .filter((c) => !key.includes(c))
    .map((c) => `${c} = excluded.${c}`)
    .concat(['last_changed_at = now()'])
    .concat(
      t.webhooks
        ? [`origin = case when ${t.table}.origin = 'webhook' then 'both' else ${t.table}.origin end`]
        : [],
    )
    .join(', ');
  // In ON CONFLICT: the incoming version replaces the stored one unless it is of an earlier other
  // day and the stored one is still served by its own day (src/load/upsert.ts).
  const laterKeepsKey = `(${t.table}.dt is null or excluded.dt is null
        or (${t.table}.dt at time zone 'UTC')::date = (excluded.dt at time zone 'UTC')::date
        or excluded.dt > ${t.table}.dt or ${t.table}.absent_since is not null)`;
  const upsert = (conflict: string) => `
      insert into ${t.table} (${columns.join(', ')})
      select ${columns.map((c) => `s.${c}`).join(', ')} from ${stage} s
       where not exists (select 1 from ${t.table} t where ${match} and ${same('t', 's')})
       order by ${key.map((c) => `s.${c}`).join(', ')}
      on conflict (${keyList}) ${conflict}
      returning (xmax = 0) as is_insert`;
  const updating = `do update set ${updates} where not (${same(t.table, 'excluded')}) and ${laterKeepsKey}`;
  const contradicted = t.webhooks
    ? `select distinct t.visitor_id from ${t.table} t join ${stage} s on ${match}
        where t.origin = 'webhook' and t.visitor_id is not null and s.visitor_id is distinct from t.visitor_id`
    : 'select null::text as visitor_id where false';
  const setAside = `
    with losers as (
      insert into key_collisions (source_id, resource, item_key, dt, raw, run_id)
      select s.source_id, '${t.resource}', ${itemKey('s')}, s.dt, s.raw, p_run_id
        from ${stage} s join ${t.table} t on ${match}
       where t.dt is not null and s.dt is not null
         and (t.dt at time zone 'UTC')::date <> (s.dt at time zone 'UTC')::date and t.dt > s.dt
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
  const clearServed = `
      update ${t.table} t
         set absent_since = null, missing_upstream_since = null, superseded_by_reject_at = null
        from ${stage} s
       where ${match}
         and (t.absent_since is not null or t.missing_upstream_since is not null or t.superseded_by_reject_at is not null)
         and (t.dt at time zone 'UTC')::date = (s.dt at time zone 'UTC')::date`;
  const stageRows = (source: string) => `
    insert into ${stage} (${columns.join(', ')})
    select ${columns.map(fromItem).join(', ')} from ${source}`;
  return {
    stage,
    key,
    keyList,
    match,
    itemKey,
    fields,
    upsert,
    updating,
    contradicted,
    setAside,
    clearServed,
    stageRows,
    visitors: visitorsMerge(stage),
  };
}

/** The visitors' merge from a table's staged items (src/load/visitors.ts). */
function visitorsMerge(stage: string): string {
  const visitorUpdates = VISITOR_COLUMNS.filter((c) => c !== 'source_id' && c !== 'id')
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
      select l.*, f.* from latest l, jsonb_to_record(l.raw) as f(${VISITOR_FIELDS})
    ), written as (
      insert into visitors as t (${VISITOR_COLUMNS.join(', ')})
      select ${VISITOR_COLUMNS.map((c) => `s.${c}`).join(', ')} from observed s
       where not exists (select 1 from visitors v
                          where v.source_id = s.source_id and v.id = s.id and not ${newer('s', 'v')})
       order by s.source_id, s.id
      on conflict (source_id, id) do update set ${visitorUpdates},
        last_changed_at = case when t.raw is distinct from excluded.raw then now() else t.last_changed_at end
      where ${newer('excluded', 't')}
      returning (xmax = 0) as is_insert, last_changed_at = now() as changed
    )
    select count(*) filter (where is_insert)::int, count(*) filter (where not is_insert and changed)::int
      from written`;
}

type Statements = ReturnType<typeof statementsOf>;

/** The items' merge of one table: the loader's statements, in its order (src/load/windowed.ts). */
function itemsBody(t: WindowTable): string {
  const s = statementsOf(t);
  const parts = [stagePart, writePart, movesPart, visitorsPart, promotePart].map((part) => part(t, s));
  return `
  declare
    v_items integer := 0;
    v_kept integer := 0;
    v_staged integer := 0;
    v_conflicts integer := 0;
    v_inserted integer := 0;
    v_updated integer := 0;
    v_withheld integer := 0;
    v_replaced integer := 0;
    v_moves integer := 0;
    v_marked integer := 0;
    v_reclassified integer := 0;
    v_missing integer := 0;
    v_contradicted text[];
    v_versions jsonb[];
    v_promoted integer := 0;
    v_promoted_replaced integer := 0;
    v_promoted_moves integer := 0;
    v_visitors jsonb := '{"inserted": 0, "updated": 0, "unchanged": 0, "conflicts": 0}';
    v_visitors_inserted integer := 0;
    v_visitors_updated integer := 0;
    v_visitor_ids integer := 0;
    v_visitor_conflicts integer := 0;
  begin
${parts.join('')}    return jsonb_build_object(
      'inserted', v_inserted, 'updated', v_updated,
      'unchanged', v_staged - v_inserted - v_updated - v_withheld,
      'collisions', v_withheld + v_replaced, 'withheld', v_withheld,
      'moves', v_moves + v_reclassified + v_promoted_moves, 'missingUpstream', v_missing,
      'duplicates', v_kept - v_staged, 'conflicts', v_conflicts, 'visitors', v_visitors,
      'suppressed', v_items - v_kept);
  end`;
}

/** The staging table, the suppression list's lock, the answer staged (best copy of a key, no forgotten visitor). */
function stagePart(t: WindowTable, s: Statements): string {
  const { stage, keyList, fields, stageRows } = s;
  return `    if to_regclass('${stage}') is null then
      -- Keyed like the table: a statement joining from the stored table's side finds each staged row by its key.
      create temp table window_${t.table} (like ${t.table} including defaults, primary key (${keyList}))
        on commit delete rows;
    end if;
    delete from ${stage};
    ${
      t.webhooks
        ? `-- A forgotten visitor's items are dropped before anything of them is written: the writers'
    -- shared lock on the suppression list first, in a statement of its own (the next one's
    -- snapshot sees a forget committed meanwhile; src/privacy/suppression.ts).
    if jsonb_array_length(p_items) > 0 then
      if share_suppression_lock() <> 1 then
        raise exception 'the row of suppression_lock is missing: run \`insights-sync migrate\` as the schema owner';
      end if;
    end if;`
        : ''
    }
    with e as (
      select x.item, x.n${t.webhooks ? `, x.item -> 'visitor' ->> 'id' as visitor_id` : ''}, r.*
        from jsonb_array_elements(p_items) with ordinality as x(item, n),
             jsonb_to_record(x.item) as r(${fields})
    ), kept as (
      select * from e${
        t.webhooks
          ? `
       where not exists (select 1 from suppressed_visitors v
                          where v.source_id = p_source and v.visitor_id = e.visitor_id)`
          : ''
      }
    ), staged as (${stageRows(`(select distinct on (${t.key.join(', ')}) * from kept order by ${t.key.join(', ')}, n) e`)}
      returning 1
    )
    select (select count(*)::int from e), (select count(*)::int from kept), (select count(*)::int from staged),
           (select count(*)::int from (select 1 from kept group by ${t.key.join(', ')}
                                        having count(distinct item) > 1) c)
      into v_items, v_kept, v_staged, v_conflicts;
`;
}

/** The upsert, the collisions set aside, the contradicted webhook visitors removed. */
function writePart(t: WindowTable, s: Statements): string {
  const { upsert, updating, contradicted, setAside } = s;
  return `
    if v_staged > 0 then
      if p_mode = 'insert-missing' then
        with written as (${upsert('do nothing')})
        select count(*) filter (where is_insert)::int, count(*) filter (where not is_insert)::int
          into v_inserted, v_updated from written;
      else
        -- The webhook rows whose visitor the API's copy contradicts, read by the upsert before it writes.
        with contradicted as (${contradicted}), written as (${upsert(updating)})
        select count(*) filter (where is_insert)::int, count(*) filter (where not is_insert)::int,
               (select array_agg(c.visitor_id order by c.visitor_id) from contradicted c)
          into v_inserted, v_updated, v_contradicted from written;
        ${setAside} into v_withheld, v_replaced, v_moves;
      end if;
    end if;
    ${
      t.webhooks
        ? `-- A webhook's visitor the API contradicts, that no row names any more (src/load/visitors.ts).
    if coalesce(array_length(v_contradicted, 1), 0) > 0 then
      delete from visitors v
       where v.source_id = p_source and v.id = any(v_contradicted) and v.observed_at is null
         and not exists (select 1 from feedback f where f.source_id = v.source_id and f.visitor_id = v.id)
         and not exists (select 1 from survey_answers a where a.source_id = v.source_id and a.visitor_id = v.id);
    end if;`
        : ''
    }
`;
}

/** Marks cleared (any answer) or set (a whole one), the moved versions found. */
function movesPart(t: WindowTable, s: Statements): string {
  const { stage, key, match, itemKey, clearServed } = s;
  return `    if not p_whole then
      -- Serving an item proves it exists, whole read or not: only marking absence needs a whole one.
      if v_staged > 0 then ${clearServed}; end if;
    else
      -- A whole day's answer: rows it lacks are absent (missing upstream on a second run in a
      -- row), rows it holds served (src/load/moved-items.ts).
      with cleared as (${clearServed}), marked as (
        update ${t.table} t
           set missing_upstream_since = case when t.absent_since is null then t.missing_upstream_since else now() end,
               absent_since = coalesce(t.absent_since, now())
          from (select ${key.map((c) => `d.${c}`).join(', ')} from ${t.table} d
                 where d.source_id = p_source and ${onDay('d')}
                except
                select ${key.map((c) => `x.${c}`).join(', ')} from ${stage} x) s
         where ${match} and (t.absent_since is null or t.missing_upstream_since is null)
        returning t.missing_upstream_since = now() as missing_now
      )
      select count(*)::int into v_marked from marked where missing_now;
      -- Set-aside versions of the day its answer lacks moved; the versions other days serve of
      -- the day's absent rows are read, to take their keys (disjoint rows of key_collisions).
      with moved as (
        update key_collisions k set reason = 'moved', run_id = p_run_id
         where k.source_id = p_source and k.resource = '${t.resource}' and k.reason = 'collision'
           and ${onDay('k')}
           and (k.item_key, k.dt) not in (select ${itemKey('s')}, s.dt from ${stage} s)
        returning 1
      )
      select (select count(*)::int from moved),
             (select array_agg(v.raw) from (
                select distinct on (k.item_key) k.raw
                  from key_collisions k join ${t.table} t on k.item_key = ${itemKey('t')}
                 where t.source_id = p_source and t.absent_since is not null and ${onDay('t')}
                   and k.source_id = p_source and k.resource = '${t.resource}' and k.reason = 'collision'
                   and (k.dt at time zone 'UTC')::date <> p_day
                 order by k.item_key, k.first_seen_at desc, k.dt desc) v)
        into v_reclassified, v_versions;
    end if;
`;
}

/** The visitors' merge, last of the answer's writes. */
function visitorsPart(t: WindowTable, s: Statements): string {
  const { stage, visitors } = s;
  return `    ${
    t.webhooks
      ? `-- Visitors last of the answer's writes, read from its staged rows: a busy visitor's row
    -- stays locked until commit, so the shorter that tail the more windows load at once.
    if v_staged > 0 then
      ${visitors} into v_visitors_inserted, v_visitors_updated;
      select count(distinct x.visitor_id)::int,
             (select count(*)::int from (select 1 from ${stage} y where y.visitor_id is not null
                                          group by y.visitor_id having count(distinct y.raw -> 'visitor') > 1) c)
        into v_visitor_ids, v_visitor_conflicts
        from ${stage} x;
      v_visitors := jsonb_build_object('inserted', v_visitors_inserted, 'updated', v_visitors_updated,
        'unchanged', v_visitor_ids - v_visitors_inserted - v_visitors_updated, 'conflicts', v_visitor_conflicts);
    end if;`
      : ''
  }
`;
}

/** The versions other days serve take the keys of a whole day's absent rows. */
function promotePart(t: WindowTable, s: Statements): string {
  const { stage, itemKey, fields, upsert, updating, setAside, clearServed, stageRows } = s;
  return `    if p_whole then
      if coalesce(array_length(v_versions, 1), 0) = 0 then
        v_missing := v_marked;
      else
        -- Our own copies of items validated when first read: their rows are built as then.
        delete from ${stage};
        ${stageRows(`(select x.item${t.webhooks ? `, x.item -> 'visitor' ->> 'id' as visitor_id` : ''}, r.*
          from unnest(v_versions) as x(item), jsonb_to_record(x.item) as r(${fields})) e`)};
        -- Of this upsert only the moves count: the answer's own counts stand.
        with written as (${upsert(updating)})
        select count(*)::int into v_promoted from written;
        ${setAside} into v_promoted, v_promoted_replaced, v_promoted_moves;
        delete from key_collisions k using ${stage} s
         where k.source_id = s.source_id and k.resource = '${t.resource}'
           and k.item_key = ${itemKey('s')} and k.dt = s.dt;
        ${clearServed};
        select count(*)::int into v_missing from ${t.table} t
         where t.source_id = p_source and ${onDay('t')} and t.missing_upstream_since = now();
      end if;
    end if;
`;
}

/** The watermark moved to the end of the run of done days after it (src/ledger/watermark.ts says why so). */
const WATERMARK = `    if p_ledger ->> 'status' = 'done' then
      -- The watermark, serialised per source and resource by its row's lock (src/ledger/watermark.ts).
      perform 1 from watermarks where source_id = p_source and resource = p_resource for update;
      if not found then
        insert into watermarks (source_id, resource, start_day, day)
        values (p_source, p_resource, (p_ledger ->> 'start_day')::date, null)
        on conflict (source_id, resource) do nothing;
        perform 1 from watermarks where source_id = p_source and resource = p_resource for update;
      end if;
      if found then
        -- A statement of its own: its snapshot sees what the lock's previous holder committed.
        select w.start_day, w.day into v_start, v_mark
          from watermarks w where w.source_id = p_source and w.resource = p_resource;
        -- The end of the run of done days right after the watermark, before today.
        v_from := coalesce(v_mark + 1, v_start);
        select max(d.day) into v_next from (
          select s.day, s.day - (row_number() over (order by s.day))::integer as run_start
            from sync_windows s
           where s.source_id = p_source and s.resource = p_resource and s.status = 'done'
             and s.day >= v_from and s.day < (p_ledger ->> 'today')::date) d
         where d.run_start = v_from - 1;
        if v_next is not null and (v_mark is null or v_next > v_mark) then
          update watermarks set day = v_next, updated_at = now()
           where source_id = p_source and resource = p_resource and (day is null or day < v_next);
        end if;
      end if;
    end if;
`;

/**
 * The rest of the window, after its items: the source's row first (rows reference it), the
 * rejects of a visitor not forgotten, the marks of the rows they supersede, the ledger row, the
 * proofs, the watermark. A null p_ledger writes items (and rejects) only: the neighbours' load.
 */
function storeBody(): string {
  const dispatch = TABLES.map(
    (t) =>
      `when '${t.resource}' then v_load := merge_window_${t.table}(p_source, p_day, p_items, p_whole, p_mode, p_run_id);`,
  ).join('\n      ');
  // The rejects kept and the rows they supersede, one statement (disjoint tables).
  const rejects = TABLES.map((t) => {
    const keys = t.key.map((c, i) => {
      const text = `k.r -> 'key' ->> ${i}`;
      return `${t.fields[c] === 'bigint' ? `(${text})::bigint` : text} as ${c}`;
    });
    return `when '${t.resource}' then
        with kept as (
          select x.r, x.n from jsonb_array_elements(p_rejects) with ordinality as x(r, n)
           where x.r ->> 'visitor' is null
              or not exists (select 1 from suppressed_visitors v
                              where v.source_id = p_source and v.visitor_id = x.r ->> 'visitor')
        ), stored as (
          -- In the given order (by content hash): windows meeting one reject lock its row in one order.
          insert into rejects (source_id, resource, item_hash, day, item, error, run_id)
          select p_source, p_resource, k.r ->> 'hash', p_day, k.r -> 'item', k.r ->> 'error', p_run_id
            from kept k order by k.n
          on conflict (source_id, resource, item_hash) do nothing
        )
        -- A row this read serves both valid and refused ends up marked stale (after the items).
        update ${t.table} t set superseded_by_reject_at = now()
          from (select ${keys.join(', ')} from kept k where k.r ? 'key') r
         where t.source_id = p_source and ${t.key.map((c) => `t.${c} = r.${c}`).join(' and ')}
           and t.superseded_by_reject_at is null and ${onDay('t')};`;
  });
  return `
  declare
    v_load jsonb;
    v_start date;
    v_mark date;
    v_from date;
    v_next date;
  begin
    if p_base_url is not null then
      -- DO NOTHING takes no row lock: no write once the row is there.
      insert into sources (source_id, base_url) values (p_source, p_base_url)
      on conflict (source_id) do nothing;
    end if;
    case p_resource
      ${dispatch}
      else raise exception 'not a windowed resource: %', p_resource using errcode = '22023';
    end case;

    if coalesce(jsonb_array_length(p_rejects), 0) > 0 then
      -- A forgotten visitor's items stay out of rejects too: the writers' lock, then the list.
      if exists (select 1 from jsonb_array_elements(p_rejects) r where r ->> 'visitor' is not null) then
        if share_suppression_lock() <> 1 then
          raise exception 'the row of suppression_lock is missing: run \`insights-sync migrate\` as the schema owner';
        end if;
      end if;
      case p_resource
      ${rejects.join('\n      ')}
      end case;
    end if;

    if p_ledger is null then return v_load; end if;
    insert into sync_windows as w (source_id, resource, day, status, item_count, requested_limit, served_count,
                                   truncated, rejected_count, attempts, last_error, run_id)
    values (p_source, p_resource, p_day, p_ledger ->> 'status', (p_ledger ->> 'item_count')::integer,
            (p_ledger ->> 'requested_limit')::integer, (p_ledger ->> 'served_count')::integer,
            (p_ledger ->> 'truncated')::boolean, (p_ledger ->> 'rejected_count')::integer, 1, null, p_run_id)
    on conflict (source_id, resource, day) do update set
      -- A closed day stays closed: a run whose clock is behind must not reopen it.
      status = case when w.status = 'done' then 'done' else excluded.status end,
      item_count = excluded.item_count,
      requested_limit = excluded.requested_limit,
      served_count = excluded.served_count,
      -- Never cleared by an answer holding fewer of the day's items than the flagged read.
      truncated = excluded.truncated or (w.truncated and excluded.item_count < w.item_count),
      rejected_count = excluded.rejected_count,
      attempts = w.attempts + 1,
      last_error = null,
      fetched_at = now(),
      run_id = excluded.run_id,
      -- Settled again: no longer reopened, and unproved until the run's next proof.
      reopened_at = null,
      proved_at = null;

    -- What the run's proofs found since the last window stored (src/extract/reading-session.ts).
    if jsonb_array_length(coalesce(p_ledger -> 'reopened', '[]')) > 0 then
      update sync_windows set reopened_at = now(), proved_at = null
       where source_id = p_source and resource = p_resource
         and day in (select d::date from jsonb_array_elements_text(p_ledger -> 'reopened') d);
    end if;
    if jsonb_array_length(coalesce(p_ledger -> 'proved', '[]')) > 0 then
      update sync_windows set proved_at = now()
       where source_id = p_source and resource = p_resource and reopened_at is null
         and day in (select d::date from jsonb_array_elements_text(p_ledger -> 'proved') d);
    end if;

${WATERMARK}    return v_load;
  end`;
}

const ITEM_ARGUMENTS =
  'p_source text, p_day date, p_items jsonb, p_whole boolean, p_mode text, p_run_id bigint';
const ITEM_TYPES = '(text, date, jsonb, boolean, text, bigint)';
const STORE_ARGUMENTS =
  'p_source text, p_base_url text, p_resource text, p_day date, p_items jsonb, p_whole boolean, p_mode text, ' +
  'p_run_id bigint, p_rejects jsonb, p_ledger jsonb';
const STORE_TYPES = '(text, text, text, date, jsonb, boolean, text, bigint, jsonb, jsonb)';

/** The window's planner settings (src/load/windowed.ts says why), for the call only. */
const SETTINGS = "set work_mem = '32MB' set enable_hashjoin = off set enable_mergejoin = off";

function signatures(bookkeeping: string): string[] {
  return [
    ...TABLES.map((t) => `${quote(bookkeeping)}.merge_window_${t.table}${ITEM_TYPES}`),
    `${quote(bookkeeping)}.store_window${STORE_TYPES}`,
  ];
}

export async function up(db: AnyDb): Promise<void> {
  const { rows } = await sql<{ data: string }>`select current_schema() as data`.execute(db);
  const data = rows[0]?.data;
  if (data === undefined) throw new Error('no current schema: the connection has no search_path');
  const bookkeeping = `${data}_state`;
  const path = `pg_catalog, ${quote(data)}, ${quote(bookkeeping)}, pg_temp`;

  for (const t of TABLES)
    await sql`create function ${sql.id(bookkeeping, `merge_window_${t.table}`)}(${sql.raw(ITEM_ARGUMENTS)})
      returns jsonb language plpgsql security invoker set search_path = ${sql.raw(path)} ${sql.raw(SETTINGS)}
      as ${sql.lit(itemsBody(t))}`.execute(db);
  await sql`create function ${sql.id(bookkeeping, 'store_window')}(${sql.raw(STORE_ARGUMENTS)})
    returns jsonb language plpgsql security invoker set search_path = ${sql.raw(path)} ${sql.raw(SETTINGS)}
    as ${sql.lit(storeBody())}`.execute(db);
  await sql`comment on function ${sql.raw(`${quote(bookkeeping)}.store_window${STORE_TYPES}`)} is ${sql.lit(
    "A sync window's write in one call, with the caller's rights: its items, their visitors, its rejects, its ledger row and the watermark (migration 0041).",
  )}`.execute(db);

  // The roles that write the ledger (the sync role), as 0020 finds them; nobody else.
  const writers = await sql<{ role: string }>`
    select distinct a.grantee::regrole::text as role
      from pg_class c
      join pg_namespace n on n.oid = c.relnamespace
      cross join lateral aclexplode(c.relacl) a
     where n.nspname = ${bookkeeping} and c.relname = 'sync_windows'
       and a.grantee <> 0 and a.grantee <> c.relowner and a.privilege_type = 'UPDATE'`.execute(db);
  for (const signature of signatures(bookkeeping)) {
    await sql`revoke all on function ${sql.raw(signature)} from public`.execute(db);
    for (const { role } of writers.rows)
      await sql`grant execute on function ${sql.raw(signature)} to ${sql.raw(role)}`.execute(db);
  }
}

function quote(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

export async function down(db: AnyDb): Promise<void> {
  const { rows } = await sql<{ data: string }>`select current_schema() as data`.execute(db);
  const bookkeeping = `${rows[0]?.data ?? ''}_state`;
  for (const signature of signatures(bookkeeping).reverse())
    await sql`drop function ${sql.raw(signature)}`.execute(db);
}
