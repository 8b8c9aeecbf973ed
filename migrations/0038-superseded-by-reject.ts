import { type Kysely, sql } from 'kysely';

/**
 * A stored item whose newer version failed validation. Frozen once shipped, like the others.
 *
 * When the API serves a new version of a stored feedback, survey answer or recording and that
 * version is invalid, it goes to rejects and the old row stays current: nothing told an analyst
 * the row was stale. The windowed tables gain superseded_by_reject_at, set when a read of the
 * row's UTC day holds a rejected item with the row's key, and cleared when a read serves a valid
 * version of it again. feedback_enriched, survey_answers_enriched and missing_upstream, the views
 * that show these tables' rows and their marks, gain the column last (CREATE OR REPLACE adds
 * columns only at the end, and keeps grants and comments). The views' text is 0028's, each
 * branch with the new column; views hold no search_path to pin, only functions do (0022).
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

const TABLES = ['feedback', 'survey_answers', 'recordings'] as const;
const VIEWS = ['feedback_enriched', 'survey_answers_enriched', 'missing_upstream'] as const;

const TABLE_COMMENT =
  "When a read of this row's UTC day (by dt) served a newer version of the item that failed validation (it is in rejects, with the reason): the row is the last valid version, stale. Null while no such version is pending; cleared when a read serves a valid version of the item again.";
const VIEW_COMMENT =
  'When a newer version of the item served by the API failed validation (it is in rejects): this row is its last valid version, stale. Null otherwise.';

export async function up(db: AnyDb): Promise<void> {
  const data = await dataSchema(db);
  for (const table of TABLES) {
    await sql`alter table ${sql.id(data, table)} add column superseded_by_reject_at timestamptz`.execute(db);
    await sql`comment on column ${sql.id(data, table, 'superseded_by_reject_at')} is ${sql.lit(
      TABLE_COMMENT,
    )}`.execute(db);
  }
  await replaceViews(db, data, true);
  for (const view of VIEWS)
    await sql`comment on column ${sql.id(data, view, 'superseded_by_reject_at')} is ${sql.lit(
      VIEW_COMMENT,
    )}`.execute(db);
}

export async function down(db: AnyDb): Promise<void> {
  const data = await dataSchema(db);
  // A view loses a column only by being made again: dropped, then 0028's text, comments and grants.
  const kept = await viewState(db, data);
  for (const view of VIEWS) await sql`drop view ${sql.id(data, view)}`.execute(db);
  await replaceViews(db, data, false);
  await restoreViewState(db, data, kept);
  for (const table of TABLES)
    await sql`alter table ${sql.id(data, table)} drop column superseded_by_reject_at`.execute(db);
}

async function replaceViews(db: AnyDb, data: string, marked: boolean): Promise<void> {
  const create = marked ? sql`create or replace view` : sql`create view`;
  await sql`${create} ${sql.id(data, 'feedback_enriched')} as ${sql.raw(feedbackEnriched(marked))}`.execute(
    db,
  );
  await sql`${create} ${sql.id(data, 'survey_answers_enriched')} as ${sql.raw(surveyEnriched(marked))}`.execute(
    db,
  );
  await sql`${create} ${sql.id(data, 'missing_upstream')} as ${sql.raw(missingUpstream(marked))}`.execute(db);
}

const UTC_DAY = (alias: string) => `((${alias}.dt at time zone 'UTC')::date)`;
const RECEIVED_DAY = (alias: string) =>
  `((coalesce(${alias}.webhook_received_at, ${alias}.first_seen_at) at time zone 'UTC')::date)`;
const MARK = (alias: string, marked: boolean) => (marked ? `, ${alias}.superseded_by_reject_at` : '');

/** 0028's feedback_enriched, with the mark last. */
function feedbackEnriched(marked: boolean): string {
  const branch = (day: string, where: string, flag: string) => `
    select f.source_id, f.id, f.feedback_id, f.question, f.session, f.comment, f.rating, f.rating_text,
           f.dt, ${day} as day, f.url, f.screenshot, f.origin,
           f.visitor_id, v.device, v.browser, v.os, v.landing_page, v.ref_page, ${flag}${MARK('f', marked)}
    from feedback f
    left join visitors v on v.source_id = f.source_id and v.id = f.visitor_id
    where ${where} and f.missing_upstream_since is null`;
  return `${branch(UTC_DAY('f'), 'f.dt is not null', 'false as is_provisional')}
    union all${branch(RECEIVED_DAY('f'), 'f.dt is null', 'true')}`;
}

/** 0028's survey_answers_enriched, with the mark last. */
function surveyEnriched(marked: boolean): string {
  const branch = (day: string, where: string, flag: string) => `
    select s.source_id, s.id, s.question_id, s.question, s.comment as answer, s.session,
           s.dt, ${day} as day, s.url, s.origin,
           s.visitor_id, v.device, v.browser, v.os, v.landing_page, v.ref_page, ${flag}${MARK('s', marked)}
    from survey_answers s
    left join visitors v on v.source_id = s.source_id and v.id = s.visitor_id
    where ${where} and s.missing_upstream_since is null`;
  return `${branch(UTC_DAY('s'), 's.dt is not null', 'false as is_provisional')}
    union all${branch(RECEIVED_DAY('s'), 's.dt is null', 'true')}`;
}

/** 0028's missing_upstream, with the mark last. */
function missingUpstream(marked: boolean): string {
  const branch = (table: string, resource: string, key: string) => `
    select t.source_id, '${resource}'::text as resource, ${key} as item_key, t.dt, ${UTC_DAY('t')} as day,
           t.absent_since, t.missing_upstream_since${MARK('t', marked)}
    from ${table} t where t.missing_upstream_since is not null`;
  return [
    branch('feedback', 'feedback', "t.id::text || '/' || t.feedback_id::text"),
    branch('survey_answers', 'survey', "t.id::text || '/' || t.question_id::text"),
    branch('recordings', 'recordings', 't.id::text'),
  ].join('\n    union all');
}

/** The views' comments (of the view and each column) and grants, to put back on the views made again. */
interface ViewState {
  comments: { view: string; column: string | null; text: string }[];
  grants: string[];
}

async function viewState(db: AnyDb, data: string): Promise<ViewState> {
  const comments = await sql<{ view: string; column: string | null; text: string }>`
    select c.relname as view, a.attname as column, d.description as text
      from pg_description d
      join pg_class c on c.oid = d.objoid and d.classoid = 'pg_class'::regclass
      join pg_namespace n on n.oid = c.relnamespace
      left join pg_attribute a on a.attrelid = c.oid and a.attnum = d.objsubid and d.objsubid > 0
     where n.nspname = ${data} and c.relname = any(${[...VIEWS]})
       and (d.objsubid = 0 or a.attname <> 'superseded_by_reject_at')`.execute(db);
  const grants = await sql<{ statement: string }>`
    select format('grant %s on %I.%I to %I', g.privilege_type, g.table_schema, g.table_name, g.grantee) as statement
      from information_schema.role_table_grants g
     where g.table_schema = ${data} and g.table_name = any(${[...VIEWS]})
       and g.grantee <> (select pg_get_userbyid(c.relowner) from pg_class c
                           join pg_namespace n on n.oid = c.relnamespace
                          where n.nspname = ${data} and c.relname = g.table_name)`.execute(db);
  return { comments: comments.rows, grants: grants.rows.map((r) => r.statement) };
}

async function restoreViewState(db: AnyDb, data: string, state: ViewState): Promise<void> {
  for (const { view, column, text } of state.comments) {
    const target =
      column === null ? sql`view ${sql.id(data, view)}` : sql`column ${sql.id(data, view, column)}`;
    await sql`comment on ${target} is ${sql.lit(text)}`.execute(db);
  }
  for (const statement of state.grants) await sql.raw(statement).execute(db);
}

async function dataSchema(db: AnyDb): Promise<string> {
  const { rows } = await sql<{ data: string }>`select current_schema() as data`.execute(db);
  const data = rows[0]?.data;
  if (data === undefined) throw new Error('no current schema: the connection has no search_path');
  return data;
}
