import { type Kysely, sql } from 'kysely';

/**
 * The analyst views leave out rows deleted on evidence. Frozen once shipped, like the others.
 *
 * 0026 marks a windowed row missing_upstream_since when whole reads of its day lacked it in two
 * runs in a row and no other day serves its key: the service no longer has the item. The views
 * kept counting such rows, so a deleted feedback still weighed on a day's average. daily_activity,
 * feedback_enriched and survey_answers_enriched now leave them out; the rows stay in their tables,
 * and the new view missing_upstream lists them per source, resource and UTC day. absent_since
 * alone (one whole read lacked the row) is no evidence: a row so marked is still counted.
 *
 * day_completeness needs no change: its items_stored is the count of the day's last read, which
 * a marked row is by definition missing from. The three views are replaced with the same columns
 * in the same order (CREATE OR REPLACE keeps their grants and comments); views hold no
 * search_path to pin, only functions do (0022).
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

/** The condition every branch of the three views gains (empty in down). */
type Kept = (alias: string) => string;
const KEPT: Kept = (alias) => ` and ${alias}.missing_upstream_since is null`;
const ALL: Kept = () => '';

const LEFT_OUT =
  ' Rows marked missing_upstream_since (the service no longer has the item: see the view missing_upstream) are left out.';

const UPSTREAM_COMMENTS = {
  view: "Windowed rows the service no longer has (deleted on evidence): whole reads of the row's UTC day lacked it in two runs in a row, and no other day serves its key. They are kept in feedback, survey_answers and recordings, and left out of daily_activity, feedback_enriched and survey_answers_enriched. One row per marked row; group by source_id, resource and day for counts.",
  source_id: 'The configured source name (sources.source_id).',
  resource: "'feedback', 'survey' or 'recordings' (the table: feedback, survey_answers, recordings).",
  item_key:
    "The row's key joined with '/' as in key_collisions: id/feedback_id (feedback), id/question_id (survey), id (recordings).",
  dt: 'The date and time the service gave the item, as last stored.',
  day: 'UTC day of dt: the day whose whole reads no longer hold the item.',
  absent_since: 'When a whole read of its day first lacked the row (the first of the two reads).',
  missing_upstream_since: 'When the second read in a row still lacked it: the row was marked then.',
} as const;

const VIEWS = ['daily_activity', 'feedback_enriched', 'survey_answers_enriched'] as const;

export async function up(db: AnyDb): Promise<void> {
  const { data, bookkeeping } = await schemas(db);
  await replaceViews(db, data, bookkeeping, KEPT);
  for (const view of VIEWS) {
    const text = await viewComment(db, data, view);
    await sql`comment on view ${sql.id(data, view)} is ${sql.lit(`${text}${LEFT_OUT}`)}`.execute(db);
  }
  await sql`create view ${sql.id(data, 'missing_upstream')} as ${sql.raw(missingUpstream())}`.execute(db);
  const { view: text, ...columns } = UPSTREAM_COMMENTS;
  await sql`comment on view ${sql.id(data, 'missing_upstream')} is ${sql.lit(text)}`.execute(db);
  for (const [column, columnText] of Object.entries(columns))
    await sql`comment on column ${sql.id(data, 'missing_upstream', column)} is ${sql.lit(columnText)}`.execute(
      db,
    );
}

export async function down(db: AnyDb): Promise<void> {
  const { data, bookkeeping } = await schemas(db);
  await sql`drop view ${sql.id(data, 'missing_upstream')}`.execute(db);
  await replaceViews(db, data, bookkeeping, ALL);
  for (const view of VIEWS) {
    const text = await viewComment(db, data, view);
    await sql`comment on view ${sql.id(data, view)} is ${sql.lit(text.replace(LEFT_OUT, ''))}`.execute(db);
  }
}

async function replaceViews(db: AnyDb, data: string, bookkeeping: string, kept: Kept): Promise<void> {
  await sql`create or replace view ${sql.id(data, 'feedback_enriched')} as ${sql.raw(feedbackEnriched(kept))}`.execute(
    db,
  );
  await sql`create or replace view ${sql.id(data, 'survey_answers_enriched')} as ${sql.raw(
    surveyEnriched(kept),
  )}`.execute(db);
  await sql`create or replace view ${sql.id(data, 'daily_activity')} as ${sql.raw(
    dailyActivity(kept, bookkeeping),
  )}`.execute(db);
}

const UTC_DAY = (alias: string) => `((${alias}.dt at time zone 'UTC')::date)`;
/** The provisional day of 0016: the webhook delivery's receipt day while the row has no dt. */
const RECEIVED_DAY = (alias: string) =>
  `((coalesce(${alias}.webhook_received_at, ${alias}.first_seen_at) at time zone 'UTC')::date)`;

/** 0016's feedback_enriched, each branch filtered by `kept`. */
function feedbackEnriched(kept: Kept): string {
  const branch = (day: string, where: string, flag: string) => `
    select f.source_id, f.id, f.feedback_id, f.question, f.session, f.comment, f.rating, f.rating_text,
           f.dt, ${day} as day, f.url, f.screenshot, f.origin,
           f.visitor_id, v.device, v.browser, v.os, v.landing_page, v.ref_page, ${flag}
    from feedback f
    left join visitors v on v.source_id = f.source_id and v.id = f.visitor_id
    where ${where}${kept('f')}`;
  return `${branch(UTC_DAY('f'), 'f.dt is not null', 'false as is_provisional')}
    union all${branch(RECEIVED_DAY('f'), 'f.dt is null', 'true')}`;
}

/** 0016's survey_answers_enriched, each branch filtered by `kept`. */
function surveyEnriched(kept: Kept): string {
  const branch = (day: string, where: string, flag: string) => `
    select s.source_id, s.id, s.question_id, s.question, s.comment as answer, s.session,
           s.dt, ${day} as day, s.url, s.origin,
           s.visitor_id, v.device, v.browser, v.os, v.landing_page, v.ref_page, ${flag}
    from survey_answers s
    left join visitors v on v.source_id = s.source_id and v.id = s.visitor_id
    where ${where}${kept('s')}`;
  return `${branch(UTC_DAY('s'), 's.dt is not null', 'false as is_provisional')}
    union all${branch(RECEIVED_DAY('s'), 's.dt is null', 'true')}`;
}

const RESOURCES = ['feedback', 'survey', 'recordings'] as const;

/** The ledger row `w` as an analyst's status (0023); no row is 'not loaded'. */
const STATUS_OF = (w: string) => `case when ${w}.status is null then 'not loaded'
                when ${w}.status = 'failed' then 'failed'
                when ${w}.status = 'open' then 'open'
                when ${w}.truncated then 'truncated'
                else 'complete' end`;

/** daily_activity as 0016 and 0023 made it, each branch of its items filtered by `kept`. */
function dailyActivity(kept: Kept, bookkeeping: string): string {
  const state = quote(bookkeeping);
  const items = `
      select f.source_id, ${UTC_DAY('f')} as day, 'feedback' as kind, f.rating,
             null::bigint as response_id, null::bigint as duration, false as provisional
      from feedback f where f.dt is not null${kept('f')}
      union all
      select s.source_id, ${UTC_DAY('s')}, 'survey', null, s.id, null, false
      from survey_answers s where s.dt is not null${kept('s')}
      union all
      select r.source_id, ${UTC_DAY('r')}, 'recording', null, null, r.duration, false
      from recordings r where true${kept('r')}
      union all
      select f.source_id, ${RECEIVED_DAY('f')}, 'feedback', f.rating, null, null, true
      from feedback f where f.dt is null${kept('f')}
      union all
      select s.source_id, ${RECEIVED_DAY('s')}, 'survey', null, s.id, null, true
      from survey_answers s where s.dt is null${kept('s')}`;
  const grouped = `
    select items.source_id, items.day,
           count(*) filter (where items.kind = 'feedback') as feedback_count,
           avg(items.rating)::double precision as average_rating,
           count(*) filter (where items.kind = 'survey') as survey_answer_count,
           count(distinct items.response_id) as survey_response_count,
           count(*) filter (where items.kind = 'recording') as recording_count,
           avg(items.duration)::double precision as average_recording_duration,
           count(*) filter (where items.kind = 'feedback' and items.provisional) as provisional_feedback_count,
           count(*) filter (where items.kind = 'survey' and items.provisional) as provisional_survey_answer_count,
           sum(items.rating)::bigint as rating_sum, count(items.rating) as rating_count
    from (${items}) items
    group by items.source_id, items.day`;
  const joins = RESOURCES.map(
    (r) => `
    left join ${state}.sync_windows ${r}_w
      on ${r}_w.source_id = a.source_id and ${r}_w.resource = '${r}' and ${r}_w.day = a.day`,
  ).join('');
  return `
    select a.source_id, a.day, a.feedback_count, a.average_rating, a.survey_answer_count,
           a.survey_response_count, a.recording_count, a.average_recording_duration,
           a.provisional_feedback_count, a.provisional_survey_answer_count,
           ${RESOURCES.map((r) => `${STATUS_OF(`${r}_w`)} as ${r}_day_status`).join(',\n           ')},
           a.rating_sum, a.rating_count
    from (${grouped}) a${joins}`;
}

/** The marked rows of the three tables; the partial indexes of 0026 find them without a scan. */
function missingUpstream(): string {
  const branch = (table: string, resource: string, key: string) => `
    select t.source_id, '${resource}'::text as resource, ${key} as item_key, t.dt, ${UTC_DAY('t')} as day,
           t.absent_since, t.missing_upstream_since
    from ${table} t where t.missing_upstream_since is not null`;
  return [
    branch('feedback', 'feedback', "t.id::text || '/' || t.feedback_id::text"),
    branch('survey_answers', 'survey', "t.id::text || '/' || t.question_id::text"),
    branch('recordings', 'recordings', 't.id::text'),
  ].join('\n    union all');
}

async function schemas(db: AnyDb): Promise<{ data: string; bookkeeping: string }> {
  const { rows } = await sql<{ data: string }>`select current_schema() as data`.execute(db);
  const data = rows[0]?.data;
  if (data === undefined) throw new Error('no current schema: the connection has no search_path');
  return { data, bookkeeping: `${data}_state` };
}

async function viewComment(db: AnyDb, schema: string, view: string): Promise<string> {
  const { rows } = await sql<{ comment: string | null }>`
    select obj_description(${`${quote(schema)}.${quote(view)}`}::regclass, 'pg_class') as comment`.execute(
    db,
  );
  return rows[0]?.comment ?? '';
}

function quote(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
