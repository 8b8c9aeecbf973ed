import { type Kysely, sql } from 'kysely';

/**
 * When the tool last read each source's resource, whatever it found. Frozen once shipped.
 *
 * dbt's freshness of feedback, survey_answers and recordings could only use last_changed_at, which
 * moves when content changes: a quiet source, read every night, turned stale and paged someone.
 * sync_health gains last_read_at: for a day-windowed resource the last successful read of any of
 * its days (the ledger's fetched_at of a window without an error: a run writes it whether or not
 * the day changed), for a snapshot resource the last run that listed it (last_seen_at, set on
 * every row a listing holds). The tables keep last_changed_at for the last change.
 *
 * The view is replaced by itself (pg_get_viewdef) with the column after the others.
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

const COMMENT =
  "When a run last read this resource of the source successfully, whether or not anything changed: for feedback, survey and recordings the latest successful read of one of its days (the ledger), for abtesting, personalization and heatmaps the latest run that listed them (last_seen_at). Null before the first read. dbt's source freshness uses it (insights-sync dbt-sources); last_changed_at of the tables tells when content last changed.";

export async function up(db: AnyDb): Promise<void> {
  const { data, bookkeeping } = await schemas(db);
  const before = await viewDefinition(db, data);
  const read = (table: string) =>
    `(select max(x.last_seen_at) from ${quote(data)}.${table} x where x.source_id = h.source_id)`;
  await sql`create or replace view ${sql.id(data, 'sync_health')} as ${sql.raw(`
    select h.*,
           case h.resource
             when 'abtesting' then ${read('ab_tests')}
             when 'personalization' then ${read('personalization_tests')}
             when 'heatmaps' then ${read('heatmaps')}
             else (select max(x.fetched_at) from ${quote(bookkeeping)}.sync_windows x
                    where x.source_id = h.source_id and x.resource = h.resource and x.last_error is null)
           end as last_read_at
    from (${before}) h
    order by h.source_id,
             array_position(array['feedback', 'survey', 'recordings', 'abtesting', 'personalization', 'heatmaps'],
                            h.resource)`)}`.execute(db);
  await sql`comment on column ${sql.id(data, 'sync_health', 'last_read_at')} is ${sql.lit(COMMENT)}`.execute(
    db,
  );
}

export async function down(db: AnyDb): Promise<void> {
  const { data } = await schemas(db);
  const definition = await viewDefinition(db, data);
  const inner = /\bFROM \(([\s\S]*)\) h\s+ORDER BY/i.exec(definition)?.[1];
  if (inner === undefined) throw new Error('sync_health was not made by migration 0025');
  const columns = await sql<{ name: string; comment: string | null }>`
    select attname as name, col_description(attrelid, attnum) as comment from pg_attribute
     where attrelid = ${`${quote(data)}.sync_health`}::regclass and attnum > 0 and not attisdropped
       and attname <> 'last_read_at' order by attnum`.execute(db);
  const viewComment = await sql<{ comment: string | null }>`
    select obj_description(${`${quote(data)}.sync_health`}::regclass, 'pg_class') as comment`.execute(db);
  await sql`drop view ${sql.id(data, 'sync_health')}`.execute(db);
  await sql`create view ${sql.id(data, 'sync_health')} as ${sql.raw(inner)}`.execute(db);
  const text = viewComment.rows[0]?.comment;
  if (text) await sql`comment on view ${sql.id(data, 'sync_health')} is ${sql.lit(text)}`.execute(db);
  for (const c of columns.rows)
    if (c.comment !== null)
      await sql`comment on column ${sql.id(data, 'sync_health', c.name)} is ${sql.lit(c.comment)}`.execute(
        db,
      );
}

async function schemas(db: AnyDb): Promise<{ data: string; bookkeeping: string }> {
  const { rows } = await sql<{ data: string }>`select current_schema() as data`.execute(db);
  const data = rows[0]?.data;
  if (data === undefined) throw new Error('no current schema: the connection has no search_path');
  return { data, bookkeeping: `${data}_state` };
}

async function viewDefinition(db: AnyDb, data: string): Promise<string> {
  const { rows } = await sql<{ definition: string }>`
    select pg_get_viewdef(${`${quote(data)}.sync_health`}::regclass) as definition`.execute(db);
  const definition = rows[0]?.definition;
  if (definition === undefined) throw new Error('view sync_health not found');
  // pg_get_viewdef ends the query with a semicolon, which a subquery must not have.
  return definition.trim().replace(/;$/, '');
}

function quote(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
