import { type Kysely, sql } from 'kysely';

/**
 * Whether a day is complete, where analysts query. Frozen once shipped.
 *
 * The ledger (sync_windows) and what the tool learned of the server (server_readings) are in the
 * bookkeeping schema, which the analyst role may not use. day_completeness, in the data schema,
 * shows of them what says whether a day's counts can be trusted: one row per source, windowed
 * resource and UTC day from the first day loaded through today, with its status. Like
 * sync_health it is the owner's view: it reads the ledger with the owner's rights, so an analyst
 * reads these columns and nothing else of the bookkeeping (no grant on it, no USAGE on its
 * schema). It hides columns (last_error), not rows, so it needs no security_barrier: that option
 * keeps a caller's function from seeing rows a view's WHERE filters out, and this view filters
 * none.
 *
 * daily_activity is replaced with its columns in order, and gains each windowed resource's day
 * status (where feedback_day_status = 'complete' keeps a KPI to the days it counts whole) and
 * the rating's sum and count, so a weekly or monthly average is sum over count, not an average
 * of daily averages.
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

const RESOURCES = ['feedback', 'survey', 'recordings'] as const;

const DAY_STATUS =
  "'complete' (loaded, and no response was full: every item the service held for the day is stored); 'truncated' (a response held as many items as the service gives in one: items may be missing, and the API has no paging); 'failed' (the last attempt failed and no attempt succeeded; the next run tries again); 'open' (today, or a day not yet over when it was last read: the next run reads it again); 'not loaded' (no run has read the day yet).";

const COMPLETENESS_COMMENTS = {
  view: 'The ledger as analysts see it: per source, day-windowed resource (feedback, survey, recordings) and UTC day, from the first day loaded (or the start of a backfill) through today, whether the day is stored whole. Filter KPIs to complete days (daily_activity carries the same status per resource).',
  source_id: 'The configured source name (sources.source_id).',
  resource: "'feedback', 'survey' or 'recordings'.",
  day: 'The UTC day.',
  status: DAY_STATUS,
  items_stored:
    'Valid items of the day stored at the last successful read; null when the day was never loaded.',
  most_served:
    'Most items one response for this day returned; when it reaches the service cap the day is truncated. Null when never loaded.',
  requested_limit: 'The limit parameter of the last request for the day; null when never loaded.',
  cap_learned:
    "Most items the service gives in one response for this resource, as the tool learned it from the server's answers; null while unknown.",
  last_read_at:
    'When a run last read (or tried to read) the day, whether or not anything changed; null when never read.',
} as const;

const DAILY_COMMENTS = {
  feedback_day_status: `Status of the day's feedback load (day_completeness.status): ${DAY_STATUS}`,
  survey_day_status: `Status of the day's survey answers load (day_completeness.status): ${DAY_STATUS}`,
  recordings_day_status: `Status of the day's recordings load (day_completeness.status): ${DAY_STATUS}`,
  rating_sum:
    'Sum of the ratings counted in average_rating. For a week or a month, sum(rating_sum) / sum(rating_count) is the exact average; the average of average_rating is not.',
  rating_count: 'Feedback items of the day with a rating (the divisor of average_rating).',
} as const;

/** The ledger row `w` as an analyst's status; no row is 'not loaded'. */
const STATUS_OF = (w: string) => `case when ${w}.status is null then 'not loaded'
                when ${w}.status = 'failed' then 'failed'
                when ${w}.status = 'open' then 'open'
                when ${w}.truncated then 'truncated'
                else 'complete' end`;

export async function up(db: AnyDb): Promise<void> {
  const { data, bookkeeping } = await schemas(db);
  await sql`create view ${sql.id(data, 'day_completeness')} as ${sql.raw(completeness(bookkeeping))}`.execute(
    db,
  );
  await comment(db, data, 'day_completeness', COMPLETENESS_COMMENTS);
  const before = await viewDefinition(db, data, 'daily_activity');
  const columns = await viewColumns(db, data, 'daily_activity');
  await sql`create or replace view ${sql.id(data, 'daily_activity')} as ${sql.raw(
    withStatuses(before, columns, bookkeeping),
  )}`.execute(db);
  for (const [column, text] of Object.entries(DAILY_COMMENTS))
    await sql`comment on column ${sql.id(data, 'daily_activity', column)} is ${sql.lit(text)}`.execute(db);
}

export async function down(db: AnyDb): Promise<void> {
  const { data } = await schemas(db);
  await sql`drop view ${sql.id(data, 'day_completeness')}`.execute(db);
  // The view cannot lose columns in place: made again as its own query less the new columns.
  const definition = await viewDefinition(db, data, 'daily_activity');
  const kept = (await viewColumns(db, data, 'daily_activity')).filter((c) => !(c in DAILY_COMMENTS));
  const comments = await sql<{ name: string; comment: string | null }>`
    select attname as name, col_description(attrelid, attnum) as comment from pg_attribute
     where attrelid = ${`${quote(data)}.daily_activity`}::regclass and attnum > 0 and not attisdropped`.execute(
    db,
  );
  const viewComment = await sql<{ comment: string | null }>`
    select obj_description(${`${quote(data)}.daily_activity`}::regclass, 'pg_class') as comment`.execute(db);
  await sql`drop view ${sql.id(data, 'daily_activity')}`.execute(db);
  await sql`create view ${sql.id(data, 'daily_activity')} as ${sql.raw(
    `select ${kept.map((c) => `d.${quote(c)}`).join(', ')} from (${definition}) d`,
  )}`.execute(db);
  const text = viewComment.rows[0]?.comment;
  if (text) await sql`comment on view ${sql.id(data, 'daily_activity')} is ${sql.lit(text)}`.execute(db);
  for (const c of comments.rows)
    if (kept.includes(c.name) && c.comment !== null)
      await sql`comment on column ${sql.id(data, 'daily_activity', c.name)} is ${sql.lit(c.comment)}`.execute(
        db,
      );
}

async function schemas(db: AnyDb): Promise<{ data: string; bookkeeping: string }> {
  const { rows } = await sql<{ data: string }>`select current_schema() as data`.execute(db);
  const data = rows[0]?.data;
  if (data === undefined) throw new Error('no current schema: the connection has no search_path');
  return { data, bookkeeping: `${data}_state` };
}

/**
 * Days from the first a run read or a backfill started at, through today (UTC) or the last day
 * read if later (a run whose clock is ahead). Few rows (days x 3 per source): the series is cheap.
 */
function completeness(bookkeeping: string): string {
  const state = quote(bookkeeping);
  return `
    select s.source_id, r.resource, d.day::date as day,
           ${STATUS_OF('w')} as status,
           w.item_count as items_stored,
           coalesce(w.served_count, w.item_count) as most_served,
           w.requested_limit,
           sr.cap as cap_learned,
           w.fetched_at as last_read_at
    from sources s
    cross join (values ${RESOURCES.map((r) => `('${r}')`).join(', ')}) r(resource)
    cross join lateral (
      select least(min(x.day), (select wm.start_day from ${state}.watermarks wm
                                 where wm.source_id = s.source_id and wm.resource = r.resource)) as first_day,
             greatest(max(x.day), (now() at time zone 'UTC')::date) as last_day
      from ${state}.sync_windows x where x.source_id = s.source_id and x.resource = r.resource
    ) span
    cross join lateral generate_series(span.first_day, span.last_day, interval '1 day') d(day)
    left join ${state}.sync_windows w
      on w.source_id = s.source_id and w.resource = r.resource and w.day = d.day::date
    left join ${state}.server_readings sr on sr.source_id = s.source_id and sr.resource = r.resource`;
}

/** daily_activity as it was (`before`, its columns in order), with the statuses and the rating's sum and count. */
function withStatuses(before: string, columns: readonly string[], bookkeeping: string): string {
  const state = quote(bookkeeping);
  // The grouped query gains two aggregates; its other columns stay as they were.
  const grouped = before.replace(
    /\bFROM \(/,
    ',\n    sum(items.rating)::bigint as rating_sum, count(items.rating) as rating_count\n    FROM (',
  );
  if (grouped === before) throw new Error('daily_activity has no FROM (...): not the view of migration 0016');
  const joins = RESOURCES.map(
    (r) => `
    left join ${state}.sync_windows ${r}_w
      on ${r}_w.source_id = a.source_id and ${r}_w.resource = '${r}' and ${r}_w.day = a.day`,
  ).join('');
  return `
    select ${columns.map((c) => `a.${quote(c)}`).join(', ')},
           ${RESOURCES.map((r) => `${STATUS_OF(`${r}_w`)} as ${r}_day_status`).join(',\n           ')},
           a.rating_sum, a.rating_count
    from (${grouped}) a${joins}`;
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

async function comment(
  db: AnyDb,
  schema: string,
  view: string,
  comments: { view: string } & Record<string, string>,
): Promise<void> {
  const { view: text, ...columns } = comments;
  await sql`comment on view ${sql.id(schema, view)} is ${sql.lit(text)}`.execute(db);
  for (const [column, columnText] of Object.entries(columns))
    await sql`comment on column ${sql.id(schema, view, column)} is ${sql.lit(columnText)}`.execute(db);
}

function quote(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
