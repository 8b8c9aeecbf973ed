import { type Kysely, sql } from 'kysely';

/**
 * Where the analyst views still misled, and an index per source for the day-windowed tables.
 * Frozen once shipped.
 *
 * - conversion was complete / total even when complete > total (1.5), while every other
 *   statistic of the row is null there: now null too, in ab_test_results, personalization_results
 *   and test_result_daily. The Wilson bounds are clamped to 0..1 (the lower one came out
 *   -3.5e-18 at 0 completions, rounding).
 * - A declared split that does not name every current variant of a test gave srm_status
 *   'allocation unknown', as if nothing were declared: it is now 'allocation incomplete'.
 * - day_completeness: items_stored was the count of items the last read returned, not the rows
 *   stored. It stays (same value, for the queries that name it) beside items_read (its honest
 *   name), rows_stored (the rows of the table on the day, as daily_activity counts them) and
 *   items_set_aside (versions of the day kept in key_collisions instead). Its days now start at
 *   the first day the table holds a row on too, so every day of daily_activity has its row
 *   here ('not loaded' when no run read it).
 * - feedback, survey_answers and recordings get an index on (source_id, dt): a query of one
 *   source's last days read the dt index of every source.
 *
 * The test views are replaced by themselves (pg_get_viewdef) wrapped in a select that replaces
 * the changed columns, in place and in order; down unwraps them. day_completeness is written out.
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

const WINDOWED = [
  { resource: 'feedback', table: 'feedback', provisional: true },
  { resource: 'survey', table: 'survey_answers', provisional: true },
  { resource: 'recordings', table: 'recordings', provisional: false },
] as const;

/** A proportion whose count lies in 0..total; anything else has no conversion. */
const CONVERSION = 'case when o.total > 0 and o.complete between 0 and o.total then o.conversion end';

const TEST_VIEWS = ['ab_test_results', 'personalization_results'] as const;

/** Per view, each replaced column's new expression over the old view `o`. */
function replacements(view: string, data: string): Record<string, string> {
  if (view === 'test_result_daily') return { conversion: CONVERSION };
  return {
    conversion: CONVERSION,
    // Not greatest/least, which would turn a null bound into 0 or 1.
    conversion_ci_low: 'case when o.conversion_ci_low < 0 then 0 else o.conversion_ci_low end',
    conversion_ci_high: 'case when o.conversion_ci_high > 1 then 1 else o.conversion_ci_high end',
    // A test (or the source's default) with rows in expected_allocations was declared, but not
    // for every current variant.
    srm_status: `case when o.srm_status = 'allocation unknown'
                       and exists (select 1 from ${quote(data)}.expected_allocations e
                                    where e.source_id = o.source_id and e.test_id in (o.test_id, '*'))
                      then 'allocation incomplete' else o.srm_status end`,
  };
}

const CONVERSION_COMMENT =
  'complete / total (0..1); null when total is 0 and when complete is negative or above total (the other statistics of the row are null there too).';

const DAILY_CONVERSION_COMMENT =
  'complete / total that day (0..1); null when total is 0 and when complete is negative or above total.';

const TEST_COMMENTS: Readonly<Record<string, string>> = {
  conversion: CONVERSION_COMMENT,
  conversion_ci_low:
    'Lower bound of the Wilson 95% interval of conversion, never below 0; null where conversion is.',
  conversion_ci_high:
    'Upper bound of the Wilson 95% interval of conversion, never above 1; null where conversion is.',
  srm_status:
    "'allocation unknown' (no split declared for the test, nor a default for its source: not checked), 'allocation incomplete' (a split is declared, but it names no weight for at least one current variant and has no '*' row: not checked; add the variant to the source's expected_allocation), 'mismatch' (srm_p_value < 0.001), 'ok', or 'not computable' (fewer than 2 current variants, no visitors, a negative total). Null for removed variants.",
};

const COMPLETENESS_COMMENTS: Readonly<Record<string, string>> = {
  view: 'The ledger as analysts see it: per source, day-windowed resource (feedback, survey, recordings) and UTC day, from the first day loaded, the start of a backfill or the first day the table holds a row on, whichever is first, through today: whether the day is stored whole. Every day of daily_activity has its row here. Filter KPIs to complete days (daily_activity carries the same status per resource).',
  items_stored:
    'Same as items_read, under its first name (kept for the queries that use it): the items the last successful read returned, not the rows stored now (rows_stored).',
  items_read:
    'Valid items the last successful read of the day returned; null when the day was never loaded. Not the rows stored: see rows_stored and items_set_aside.',
  rows_stored:
    'Rows of the table (feedback, survey_answers, recordings) whose dt falls on the day now, counted as daily_activity counts them (rows the service no longer serves, missing_upstream, left out). Can differ from items_read: rows stay from earlier reads, and versions of a key another day holds go to key_collisions.',
  items_set_aside:
    "Versions of an item of the day kept in key_collisions instead of the table (the key is held by another day's item, or the item moved): a complete day with rows_stored 0 and items here shows nothing in daily_activity.",
};

export async function up(db: AnyDb): Promise<void> {
  const { data, bookkeeping } = await schemas(db);
  for (const { table } of WINDOWED)
    await sql`create index ${sql.id(`${table}_source_dt_idx`)} on ${sql.id(data, table)} (source_id, dt)`.execute(
      db,
    );
  for (const view of [...TEST_VIEWS, 'test_result_daily']) {
    const definition = await viewDefinition(db, data, view);
    const columns = await viewColumns(db, data, view);
    const replaced = replacements(view, data);
    const select = columns.map((c) => (c in replaced ? `${replaced[c]} as ${quote(c)}` : `o.${quote(c)}`));
    await sql`create or replace view ${sql.id(data, view)} as ${sql.raw(
      `select ${select.join(', ')} from (${definition}) o`,
    )}`.execute(db);
    for (const column of Object.keys(replaced)) {
      const text = view === 'test_result_daily' ? DAILY_CONVERSION_COMMENT : TEST_COMMENTS[column];
      if (text !== undefined)
        await sql`comment on column ${sql.id(data, view, column)} is ${sql.lit(text)}`.execute(db);
    }
  }
  await createFunctions(db, data);
  await sql`create or replace view ${sql.id(data, 'day_completeness')} as ${sql.raw(
    completeness(data, bookkeeping),
  )}`.execute(db);
  for (const [column, text] of Object.entries(COMPLETENESS_COMMENTS)) {
    if (column === 'view')
      await sql`comment on view ${sql.id(data, 'day_completeness')} is ${sql.lit(text)}`.execute(db);
    else
      await sql`comment on column ${sql.id(data, 'day_completeness', column)} is ${sql.lit(text)}`.execute(
        db,
      );
  }
}

/**
 * The day's counts, and a table's first day, as functions: written inline, each was an index
 * probe per row of the view's estimate (every day of every source, 800,000 rows while `sources`
 * has no statistics, which it rarely gets: autovacuum analyzes after 50 changed rows), a cost
 * of millions that made PostgreSQL JIT-compile the query: 2 s for a few hundred rows, where the
 * view took a millisecond. The cost declared (COST 1) is what a probe of a few index entries
 * takes next to the view's joins. Pinned search_path, names schema-qualified (0022); they run
 * with the caller's rights, on tables an analyst reads anyway.
 */
function functions(
  data: string,
): { name: string; signature: string; body: string; returns: string; comment: string }[] {
  const of = (pick: (w: (typeof WINDOWED)[number]) => string) =>
    `case resource ${WINDOWED.map((w) => `when '${w.resource}' then ${pick(w)}`).join(' ')} end`;
  const dayStart = `(day::timestamp at time zone 'UTC')`;
  const dayEnd = `((day + 1)::timestamp at time zone 'UTC')`;
  const table = (w: (typeof WINDOWED)[number]) => `${quote(data)}.${quote(w.table)}`;
  return [
    {
      name: 'day_rows_stored',
      signature: 'source_id text, resource text, day date',
      returns: 'bigint',
      body: `select ${of(
        (w) => `(select count(*) from ${table(w)} x where x.source_id = day_rows_stored.source_id
                  and x.dt >= ${dayStart} and x.dt < ${dayEnd} and x.missing_upstream_since is null)`,
      )}`,
      comment:
        "Rows of the resource's table whose dt falls on the UTC day, as daily_activity counts them (day_completeness.rows_stored).",
    },
    {
      name: 'day_items_set_aside',
      signature: 'source_id text, resource text, day date',
      returns: 'bigint',
      body: `select count(*) from ${quote(data)}.key_collisions k
              where k.source_id = day_items_set_aside.source_id and k.resource = day_items_set_aside.resource
                and k.dt >= ${dayStart} and k.dt < ${dayEnd}`,
      comment: 'Versions of items of the UTC day kept in key_collisions (day_completeness.items_set_aside).',
    },
    {
      name: 'first_row_day',
      signature: 'source_id text, resource text',
      returns: 'date',
      body: `select ${of(
        (w) => `(select (min(x.dt) at time zone 'UTC')::date from ${table(w)} x
                  where x.source_id = first_row_day.source_id and x.missing_upstream_since is null)`,
      )}`,
      comment:
        "The first UTC day the resource's table holds a row on for the source (where day_completeness starts at the latest).",
    },
  ];
}

async function createFunctions(db: AnyDb, data: string): Promise<void> {
  for (const f of functions(data)) {
    await sql`create function ${sql.id(data, f.name)}(${sql.raw(f.signature)}) returns ${sql.raw(f.returns)}
      language sql stable parallel safe cost 1 set search_path = pg_catalog, pg_temp
      as ${sql.lit(f.body)}`.execute(db);
    await sql`comment on function ${sql.id(data, f.name)}(${sql.raw(f.signature)}) is ${sql.lit(f.comment)}`.execute(
      db,
    );
  }
}

/**
 * Days from the first a run read, a backfill started at or the table holds a row on, through
 * today (UTC) or the last day read if later.
 */
function completeness(data: string, bookkeeping: string, counts = true): string {
  const state = quote(bookkeeping);
  const fn = (name: string) => `${quote(data)}.${quote(name)}`;
  return `
    select s.source_id, r.resource, d.day::date as day,
           case when w.status is null then 'not loaded'
                when w.status = 'failed' then 'failed'
                when w.status = 'open' then 'open'
                when w.truncated then 'truncated'
                else 'complete' end as status,
           w.item_count as items_stored,
           coalesce(w.served_count, w.item_count) as most_served,
           w.requested_limit,
           sr.cap as cap_learned,
           w.fetched_at as last_read_at${
             counts
               ? `,
           w.item_count as items_read,
           ${fn('day_rows_stored')}(s.source_id, r.resource, d.day::date) as rows_stored,
           ${fn('day_items_set_aside')}(s.source_id, r.resource, d.day::date) as items_set_aside`
               : ''
           }
    from ${quote(data)}.sources s
    cross join (values ${WINDOWED.map((w) => `('${w.resource}')`).join(', ')}) r(resource)
    cross join lateral (
      select least(min(x.day),
                   (select wm.start_day from ${state}.watermarks wm
                     where wm.source_id = s.source_id and wm.resource = r.resource)${
                       counts ? `, ${fn('first_row_day')}(s.source_id, r.resource)` : ''
                     }) as first_day,
             greatest(max(x.day), (now() at time zone 'UTC')::date) as last_day
      from ${state}.sync_windows x where x.source_id = s.source_id and x.resource = r.resource
    ) span
    cross join lateral generate_series(span.first_day::timestamp, span.last_day::timestamp, interval '1 day') d(day)
    left join ${state}.sync_windows w
      on w.source_id = s.source_id and w.resource = r.resource and w.day = d.day::date
    left join ${state}.server_readings sr on sr.source_id = s.source_id and sr.resource = r.resource`;
}

export async function down(db: AnyDb): Promise<void> {
  const { data, bookkeeping } = await schemas(db);
  for (const view of [...TEST_VIEWS, 'test_result_daily']) {
    const definition = await viewDefinition(db, data, view);
    const inner = /^\s*SELECT[\s\S]*?\bFROM \(([\s\S]*)\) o$/i.exec(definition)?.[1];
    if (inner === undefined) throw new Error(`${view} was not made by migration 0037`);
    await sql`create or replace view ${sql.id(data, view)} as ${sql.raw(inner)}`.execute(db);
  }
  for (const [column, text] of Object.entries(DOWN_COMMENTS))
    for (const view of TEST_VIEWS)
      await sql`comment on column ${sql.id(data, view, column)} is ${sql.lit(text)}`.execute(db);
  await sql`comment on column ${sql.id(data, 'test_result_daily', 'conversion')} is ${sql.lit(
    DOWN_DAILY_CONVERSION,
  )}`.execute(db);
  // The view cannot lose columns in place: 0023's query, made again.
  await sql`drop view ${sql.id(data, 'day_completeness')}`.execute(db);
  await sql`create view ${sql.id(data, 'day_completeness')} as ${sql.raw(
    completeness(data, bookkeeping, false),
  )}`.execute(db);
  for (const [column, text] of Object.entries(DOWN_COMPLETENESS_COMMENTS)) {
    if (column === 'view')
      await sql`comment on view ${sql.id(data, 'day_completeness')} is ${sql.lit(text)}`.execute(db);
    else
      await sql`comment on column ${sql.id(data, 'day_completeness', column)} is ${sql.lit(text)}`.execute(
        db,
      );
  }
  for (const f of functions(data))
    await sql`drop function ${sql.id(data, f.name)}(${sql.raw(f.signature)})`.execute(db);
  for (const { table } of WINDOWED)
    await sql`drop index ${sql.id(data, `${table}_source_dt_idx`)}`.execute(db);
}

const DOWN_COMMENTS: Readonly<Record<string, string>> = {
  conversion: 'complete / total (0..1); null when total is 0.',
  conversion_ci_low: 'Lower bound of the Wilson 95% interval of conversion; null when total is 0.',
  conversion_ci_high: 'Upper bound of the Wilson 95% interval of conversion; null when total is 0.',
  srm_status:
    "'allocation unknown' (no split declared for the test: not checked), 'mismatch' (srm_p_value < 0.001), 'ok', or 'not computable' (fewer than 2 current variants, no visitors, a negative total). Null for removed variants.",
};

const DOWN_DAILY_CONVERSION = 'complete / total that day (0..1); null when total is 0.';

const DOWN_COMPLETENESS_COMMENTS: Readonly<Record<string, string>> = {
  view: 'The ledger as analysts see it: per source, day-windowed resource (feedback, survey, recordings) and UTC day, from the first day loaded (or the start of a backfill) through today, whether the day is stored whole. Filter KPIs to complete days (daily_activity carries the same status per resource).',
  source_id: 'The configured source name (sources.source_id).',
  resource: "'feedback', 'survey' or 'recordings'.",
  day: 'The UTC day.',
  status:
    "'complete' (loaded, and no response was full: every item the service held for the day is stored); 'truncated' (a response held as many items as the service gives in one: items may be missing, and the API has no paging); 'failed' (the last attempt failed and no attempt succeeded; the next run tries again); 'open' (today, or a day not yet over when it was last read: the next run reads it again); 'not loaded' (no run has read the day yet).",
  items_stored:
    'Valid items of the day stored at the last successful read; null when the day was never loaded.',
  most_served:
    'Most items one response for this day returned; when it reaches the service cap the day is truncated. Null when never loaded.',
  requested_limit: 'The limit parameter of the last request for the day; null when never loaded.',
  cap_learned:
    "Most items the service gives in one response for this resource, as the tool learned it from the server's answers; null while unknown.",
  last_read_at:
    'When a run last read (or tried to read) the day, whether or not anything changed; null when never read.',
};

async function schemas(db: AnyDb): Promise<{ data: string; bookkeeping: string }> {
  const { rows } = await sql<{ data: string }>`select current_schema() as data`.execute(db);
  const data = rows[0]?.data;
  if (data === undefined) throw new Error('no current schema: the connection has no search_path');
  return { data, bookkeeping: `${data}_state` };
}

async function viewColumns(db: AnyDb, schema: string, view: string): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`
    select attname as name from pg_attribute
     where attrelid = ${`${quote(schema)}.${quote(view)}`}::regclass and attnum > 0 and not attisdropped
     order by attnum`.execute(db);
  return rows.map((r) => r.name);
}

async function viewDefinition(db: AnyDb, schema: string, view: string): Promise<string> {
  const { rows } = await sql<{ definition: string }>`
    select pg_get_viewdef(${`${quote(schema)}.${quote(view)}`}::regclass) as definition`.execute(db);
  const definition = rows[0]?.definition;
  if (definition === undefined) throw new Error(`view ${view} not found`);
  // pg_get_viewdef ends the query with a semicolon, which a subquery must not have.
  return definition.trim().replace(/;$/, '');
}

function quote(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
