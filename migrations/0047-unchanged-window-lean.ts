import { type Kysely, sql } from 'kysely';

/**
 * A window the warehouse already holds as it is costs the server less, and a window is one round
 * trip with its inventory of unknown fields. The nightly re-read of settled days is the common
 * window: every item stored identical, every visitor already as recent. merge_window_<table>
 * (migrations 0041 to 0046) ran each of its statements all the same, each a plan started and a
 * probe of every staged row that found nothing to write.
 * - After staging, one probe: is every staged row stored identical (same raw and dt, not a row
 *   only a webhook wrote, no mark to clear) and, for a whole day's answer, is no other row of the
 *   day stored (none to mark absent)? Then the upsert, the cross-day losers, the contradicted
 *   webhook visitors, the marks cleared and set are skipped: each could only find nothing.
 *   Otherwise (any row new, changed, marked, or a row of the day missing) all runs as before.
 * - The visitors: only those whose stored row is not at least as recent go to merge_visitors()
 *   (migration 0043), which wrote nothing for the others (the most recent observation of each
 *   visitor is among those kept whenever any is); none, and the call is skipped. A window with a
 *   new item calls it as before: its visitors are nearly always more recent, and the first probe
 *   would repeat merge_visitors' own.
 * - store_window() updates the inventory of unknown fields (schema_drift, migration 0027) for a
 *   window carrying none, given as `drift` in its ledger argument: the update the worker sent as
 *   a statement of its own after each window (src/load/schema-drift.ts, DRIFT_UPDATE, its paths
 *   empty). Last in the statement, after the watermark, whose row lock already orders a pair's
 *   windows; in a block of its own, so that a failure there costs a note (the result's
 *   `driftError`), not the day. A window carrying unknown fields records them as before, in a
 *   transaction of its own that takes the pair's turn.
 * - merge_window_<table> keeps the generic plans of its statements (plan_cache_mode
 *   force_generic_plan, a setting of the function, as its joins' are): the marks cleared and the
 *   cross-day losers (0046's init plans) were planned again on every window that ran them once the
 *   unchanged windows stopped running them. PL/pgSQL keeps a generic plan only while it costs less
 *   than the mean of the custom plans made so far, and those costs follow the staging table, which
 *   grows between truncations (migration 0045): plans made while it was small (the unchanged
 *   windows made none) left the mean below the generic plan's cost, and every changed or new
 *   window paid two plannings, about 0.4 ms of the server's time. A generic plan is made again
 *   whenever the staging table is truncated, so its estimates follow the table as custom plans
 *   would; and the merge's plans were generic at all other times already.
 * Done as 0043 did: each statement, found exactly as the earlier migrations wrote it, is replaced
 * in the function's definition (CREATE OR REPLACE of pg_get_functiondef): owner, grants, settings
 * and comments stay. The earlier texts are copied here, frozen, to find them and for down().
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

interface WindowTable {
  table: 'feedback' | 'survey_answers' | 'recordings';
  key: readonly string[];
  /** Rows record whether a webhook or the API wrote them (origin), and carry a visitor. */
  webhooks: boolean;
}

const TABLES: readonly WindowTable[] = [
  { table: 'feedback', key: ['id', 'feedback_id'], webhooks: true },
  { table: 'survey_answers', key: ['id', 'question_id'], webhooks: true },
  { table: 'recordings', key: ['id'], webhooks: false },
];

const ITEM_TYPES = '(text, date, jsonb, boolean, text, bigint)';
const STORE_TYPES = '(text, text, text, date, jsonb, boolean, text, bigint, jsonb, jsonb)';

/** Row `alias` has dt on the UTC day p_day, as 0041 wrote it. */
const onDay = (alias: string) =>
  `${alias}.dt >= (p_day::timestamp at time zone 'UTC') and ${alias}.dt < ((p_day + 1)::timestamp at time zone 'UTC')`;

/** The declarations 0041 ended with, and this migration's after them. */
function declarations(t: WindowTable): { copy: string; call: string } {
  const copy = '    v_visitor_conflicts integer := 0;\n  begin\n';
  const visitors = t.webhooks
    ? '    v_sources text[];\n    v_observations jsonb[];\n    v_observed timestamptz[];\n'
    : '';
  return {
    copy,
    call: `    v_visitor_conflicts integer := 0;
    v_unchanged boolean := false;
${visitors}  begin
`,
  };
}

/** The probe, before 0041's write of the items (the upsert, in both modes), which it gates. */
function probe(t: WindowTable): { copy: string; call: string } {
  const stage = `pg_temp.window_${t.table}`;
  const match = ['source_id', ...t.key].map((c) => `t.${c} = s.${c}`).join(' and ');
  const copy = `
    if v_staged > 0 then
      if p_mode = 'insert-missing' then`;
  return {
    copy,
    call: `
    -- The answer as the warehouse holds it (the nightly re-read of a settled day): every staged
    -- row stored identical with no mark to clear and, for a whole day's answer, no other row of
    -- the day. The statements that could then write nothing are skipped.
    if v_staged > 0 then
      -- Probed from each staged row (a sub-select of its own, which the planner cannot turn into a
      -- join scanning the stored table), by its key, up to the first row not stored so: a changed
      -- or new window pays one probe, not one a row.
      select not exists (select 1 from (select exists (select 1 from ${t.table} t
                                          where ${match} and t.dt = s.dt and t.raw is not distinct from s.raw${t.webhooks ? ` and t.origin <> 'webhook'` : ''}
                                            and t.absent_since is null and t.missing_upstream_since is null
                                            and t.superseded_by_reject_at is null) as same
                                  from ${stage} s offset 0) p
                          where not p.same)
        into v_unchanged;
      if v_unchanged and p_whole then
        -- Each staged row of the day is a stored one (keys are unique): no other is stored when
        -- the day holds as many.
        select (select count(*) from ${t.table} d where d.source_id = p_source and ${onDay('d')})
               = (select count(*) from ${stage} p where ${onDay('p')})
          into v_unchanged;
      end if;
    end if;

    if v_staged > 0 and not v_unchanged then
      if p_mode = 'insert-missing' then`,
  };
}

/** The gates of 0041's (and 0044's, 0046's) marks cleared and set. */
function markGates(): { copy: string; call: string }[] {
  return [
    { copy: 'if v_staged > v_inserted then ', call: 'if v_staged > v_inserted and not v_unchanged then ' },
    {
      copy: '\n      with cleared as (\n',
      call: '\n      if not v_unchanged then\n      with cleared as (\n',
    },
    {
      copy: '\n      select count(*)::int into v_marked from marked where missing_now;\n',
      call: '\n      select count(*)::int into v_marked from marked where missing_now;\n      end if;\n',
    },
  ];
}

/** 0044's visitors' statement (its visitorsCall), as it wrote it. */
function visitorsCopy(stage: string): string {
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

/**
 * The same pass, keeping of each visitor's latest observations those more recent than its stored
 * row (merge_visitors' own rule, src/load/visitors.ts); merge_visitors() only when one is left.
 */
function visitorsCall(stage: string): string {
  const stale = `exists (select 1 from visitors s
                           where s.source_id = l.source_id and s.id = l.visitor_id and s.observed_at is not null
                             and (s.observed_at > l.dt or (s.observed_at = l.dt
                                  and (l.visitor::text collate "C") <= (s.raw::text collate "C"))))`;
  return `
    with l as (
      select x.source_id, x.visitor_id, x.dt, x.visitor,
             max(x.dt) over w as latest_dt, row_number() over w as nth,
             first_value(x.visitor) over w as first_visitor
        -- OFFSET 0: the visitor taken out of each row before the sort, not the whole row sorted.
        from (select y.source_id, y.visitor_id, y.dt, y.raw -> 'visitor' as visitor
                from ${stage} y where y.visitor_id is not null offset 0) x
      window w as (partition by x.source_id, x.visitor_id)
    ), f as (
      -- Untimed observations (no dt) go as they are: merge_visitors() inserts only an unknown visitor.
      select l.*, l.dt is not distinct from l.latest_dt
                  and (l.dt is null or not ${stale}) as fresh
        from l
    ), v as (
      select array_agg(f.source_id) filter (where f.fresh) as sources,
             array_agg(f.visitor) filter (where f.fresh) as visitors,
             array_agg(f.dt) filter (where f.fresh) as observed,
             count(*) filter (where f.nth = 1)::int as ids,
             count(distinct f.visitor_id) filter (where f.visitor is distinct from f.first_visitor)::int as conflicts
        from f
    )
    select v.sources, v.visitors, v.observed, v.ids, v.conflicts
      into v_sources, v_observations, v_observed, v_visitor_ids, v_visitor_conflicts
      from v;
    if v_sources is not null then
      select count(*) filter (where r.inserted)::int, count(*) filter (where not r.inserted and r.changed)::int
        into v_visitors_inserted, v_visitors_updated
        from merge_visitors(v_sources, v_observations, v_observations, v_observed) r;
    end if;`;
}

/** 0041's end of store_window(), after the watermark, and the inventory's update before it. */
const STORE_END = {
  copy: '\n    return v_load;\n  end',
  call: `
    -- The inventory of unknown fields, for a window that carries none (a window that does records
    -- them in a transaction of its own, src/load/schema-drift.ts): each field of the source and
    -- resource counts the window's items in its run's total. A failure costs a note, not the day.
    if p_ledger ? 'drift' then
      begin
        update schema_drift set
          last_run_items = case when last_run_id is not distinct from p_run_id then last_run_items else 0 end,
          last_run_total = (case when last_run_id is not distinct from p_run_id then last_run_total else 0 end)
                           + (p_ledger -> 'drift' ->> 'total')::integer,
          last_run_id = p_run_id
         where source_id = p_source and resource = p_resource;
      exception when others then
        v_load := v_load || jsonb_build_object('driftError', sqlerrm);
      end;
    end if;
    return v_load;
  end`,
};

interface Swap {
  copy: string;
  call: string;
}

/** Each function's swaps, in order; all of one function made in one definition (each alone would not compile). */
function swaps(bookkeeping: string): { signature: string; swaps: Swap[] }[] {
  const merges = TABLES.map((t) => {
    const stage = `pg_temp.window_${t.table}`;
    const own = [declarations(t), probe(t), ...markGates()];
    if (t.webhooks)
      own.push({
        copy: visitorsCopy(stage),
        call: `
    -- New items nearly always show their visitors more recent than stored: merge_visitors()
    -- alone, whose own probe a first one would repeat. Otherwise the call is often spared.
    if v_inserted = 0 then${visitorsCall(stage)}
    else${visitorsCopy(stage)}
    end if;`,
      });
    return { signature: `${quote(bookkeeping)}.merge_window_${t.table}${ITEM_TYPES}`, swaps: own };
  });
  return [...merges, { signature: `${quote(bookkeeping)}.store_window${STORE_TYPES}`, swaps: [STORE_END] }];
}

/** Redefines the function with each `from` (found exactly once in its definition) replaced by its `to`. */
async function replaceInFunction(
  db: AnyDb,
  signature: string,
  replacements: readonly { from: string; to: string }[],
): Promise<void> {
  const { rows } = await sql<{ def: string }>`
    select pg_get_functiondef(${signature}::regprocedure) as def`.execute(db);
  let def = rows[0]?.def ?? '';
  for (const { from, to } of replacements) {
    const found = def.split(from).length - 1;
    if (found !== 1)
      throw new Error(`${signature}: the statement to replace is found ${found} times instead of once`);
    def = def.replace(from, () => to);
  }
  await sql.raw(def).execute(db);
}

/** The merge functions, whose statements keep their generic plans. */
const mergeSignatures = (bookkeeping: string) =>
  TABLES.map((t) => `${quote(bookkeeping)}.merge_window_${t.table}${ITEM_TYPES}`);

export async function up(db: AnyDb): Promise<void> {
  const bookkeeping = await bookkeepingOf(db);
  for (const { signature, swaps: own } of swaps(bookkeeping))
    await replaceInFunction(
      db,
      signature,
      own.map((s) => ({ from: s.copy, to: s.call })),
    );
  for (const signature of mergeSignatures(bookkeeping))
    await sql.raw(`alter function ${signature} set plan_cache_mode = force_generic_plan`).execute(db);
}

export async function down(db: AnyDb): Promise<void> {
  const bookkeeping = await bookkeepingOf(db);
  for (const signature of mergeSignatures(bookkeeping))
    await sql.raw(`alter function ${signature} reset plan_cache_mode`).execute(db);
  for (const { signature, swaps: own } of swaps(bookkeeping).reverse())
    await replaceInFunction(db, signature, own.map((s) => ({ from: s.call, to: s.copy })).reverse());
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
