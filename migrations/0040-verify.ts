import { type Kysely, sql } from 'kysely';

/**
 * Verify (src/sync/verify.ts) reads settled days again and records, per day, when it last did and
 * what it found: four counts an analyst can sum or filter on, rather than one document to parse.
 * Runs may be started by a verify (trigger 'verify': the `verify` command, or the schedule's
 * scrub). day_completeness gains the day's reopened_at (migration 0039), last_verified_at and the
 * last verify's counts, appended to its columns (the view is wrapped as it is, so its other
 * columns stay what they are; down unwraps it). Frozen once shipped.
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

const COLUMNS: Record<string, { type: 'timestamptz' | 'integer'; comment: string }> = {
  last_verified_at: {
    type: 'timestamptz',
    comment:
      'When a verify (the verify command, or the schedule scrub) last read this settled day again and compared it with the warehouse; null: never.',
  },
  last_verify_lacked: {
    type: 'integer',
    comment: 'Items of the day the warehouse lacked at the last verify (stored by it); null: never verified.',
  },
  last_verify_changed: {
    type: 'integer',
    comment: 'Items of the day whose stored version differed at the last verify (rewritten by it).',
  },
  last_verify_gone: {
    type: 'integer',
    comment:
      'Rows of the day the service no longer served at the last verify (marked missing_upstream_since on two whole reads, kept).',
  },
  last_verify_moved: {
    type: 'integer',
    comment: 'Items of the day whose dt the service moved to another day, found by the last verify.',
  },
};

const VIEW_COMMENTS: Record<string, string> = {
  reopened_at:
    'When a proof found the server reading this day was settled under stale (it is read again first); null when not reopened.',
  last_verified_at: COLUMNS.last_verified_at?.comment ?? '',
  last_verify_lacked: COLUMNS.last_verify_lacked?.comment ?? '',
  last_verify_changed: COLUMNS.last_verify_changed?.comment ?? '',
  last_verify_gone: COLUMNS.last_verify_gone?.comment ?? '',
  last_verify_moved: COLUMNS.last_verify_moved?.comment ?? '',
};

const TRIGGERS_BEFORE = "trigger in ('sync', 'backfill', 'schedule')";
const TRIGGERS_AFTER = "trigger in ('sync', 'backfill', 'schedule', 'verify')";

export async function up(db: AnyDb): Promise<void> {
  const { data, bookkeeping } = await schemas(db);
  let alter = db.schema.alterTable('sync_windows');
  for (const [name, column] of Object.entries(COLUMNS))
    alter = alter.addColumn(name, column.type) as unknown as typeof alter;
  await (alter as unknown as { execute(): Promise<void> }).execute();
  for (const [name, column] of Object.entries(COLUMNS))
    await sql`comment on column ${sql.ref(`sync_windows.${name}`)} is ${sql.lit(column.comment)}`.execute(db);
  await triggers(db, TRIGGERS_AFTER);

  const definition = await viewDefinition(db, data, 'day_completeness');
  const added = Object.keys(VIEW_COMMENTS)
    .map((c) => `w.${quote(c)}`)
    .join(', ');
  await sql`create or replace view ${sql.id(data, 'day_completeness')} as ${sql.raw(
    `select o.*, ${added} from (${definition}) o
       left join ${quote(bookkeeping)}.sync_windows w
         on w.source_id = o.source_id and w.resource = o.resource and w.day = o.day`,
  )}`.execute(db);
  for (const [column, text] of Object.entries(VIEW_COMMENTS))
    await sql`comment on column ${sql.id(data, 'day_completeness', column)} is ${sql.lit(text)}`.execute(db);
}

export async function down(db: AnyDb): Promise<void> {
  const { data } = await schemas(db);
  const definition = await viewDefinition(db, data, 'day_completeness');
  // pg_get_viewdef writes the join in parentheses: `FROM (( SELECT ... ) o LEFT JOIN ... w ON ...)`.
  const inner = /^\s*SELECT[\s\S]*?\bFROM \(\(([\s\S]*)\) o\s+LEFT JOIN[\s\S]*$/i.exec(definition)?.[1];
  if (inner === undefined) throw new Error('day_completeness was not made by migration 0040');
  // The view cannot lose columns in place: made again, with its columns' comments.
  const comments = await columnComments(db, data, 'day_completeness');
  const { rows: described } = await sql<{ text: string | null }>`
    select obj_description(${`${quote(data)}.day_completeness`}::regclass, 'pg_class') as text`.execute(db);
  const grants = await sql<{ grantee: string }>`
    select distinct grantee from information_schema.role_table_grants
     where table_schema = ${data} and table_name = 'day_completeness' and privilege_type = 'SELECT'
       and grantee <> current_user`.execute(db);
  await sql`drop view ${sql.id(data, 'day_completeness')}`.execute(db);
  await sql`create view ${sql.id(data, 'day_completeness')} as ${sql.raw(inner)}`.execute(db);
  for (const { column, text } of comments)
    if (!(column in VIEW_COMMENTS))
      await sql`comment on column ${sql.id(data, 'day_completeness', column)} is ${sql.lit(text)}`.execute(
        db,
      );
  const viewComment = described[0]?.text;
  if (viewComment != null)
    await sql`comment on view ${sql.id(data, 'day_completeness')} is ${sql.lit(viewComment)}`.execute(db);
  for (const { grantee } of grants.rows)
    await sql`grant select on ${sql.id(data, 'day_completeness')} to ${sql.id(grantee)}`.execute(db);
  await triggers(db, TRIGGERS_BEFORE);
  let alter = db.schema.alterTable('sync_windows');
  for (const name of Object.keys(COLUMNS)) alter = alter.dropColumn(name) as unknown as typeof alter;
  await (alter as unknown as { execute(): Promise<void> }).execute();
}

async function triggers(db: AnyDb, check: string): Promise<void> {
  await sql`alter table sync_runs drop constraint sync_runs_trigger_check`.execute(db);
  await sql`alter table sync_runs add constraint sync_runs_trigger_check check (${sql.raw(check)})`.execute(
    db,
  );
}

async function schemas(db: AnyDb): Promise<{ data: string; bookkeeping: string }> {
  const { rows } = await sql<{ data: string }>`select current_schema() as data`.execute(db);
  const data = rows[0]?.data;
  if (data === undefined) throw new Error('no current schema: the connection has no search_path');
  return { data, bookkeeping: `${data}_state` };
}

async function viewDefinition(db: AnyDb, schema: string, view: string): Promise<string> {
  const { rows } = await sql<{ definition: string }>`
    select pg_get_viewdef(${`${quote(schema)}.${quote(view)}`}::regclass) as definition`.execute(db);
  const definition = rows[0]?.definition;
  if (definition === undefined) throw new Error(`view ${view} not found`);
  // pg_get_viewdef ends the query with a semicolon, which a subquery must not have.
  return definition.trim().replace(/;$/, '');
}

async function columnComments(
  db: AnyDb,
  schema: string,
  view: string,
): Promise<{ column: string; text: string }[]> {
  const { rows } = await sql<{ column: string; text: string | null }>`
    select attname as column, col_description(attrelid, attnum) as text from pg_attribute
     where attrelid = ${`${quote(schema)}.${quote(view)}`}::regclass and attnum > 0 and not attisdropped
     order by attnum`.execute(db);
  return rows.flatMap((r) => (r.text === null ? [] : [{ column: r.column, text: r.text }]));
}

function quote(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
