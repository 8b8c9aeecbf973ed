import { type Kysely, sql } from 'kysely';

/**
 * Moved items. Frozen once shipped, like the others.
 *
 * An item whose date the service corrects comes back with its key on another day, and the day it
 * left no longer serves it. The rule "the later dt keeps the key" assumed two live items, so a
 * move to an earlier day left the dead version in the table for good, and a move to a later day
 * was counted as a collision. A windowed row now records when a whole read of its own day last
 * lacked it (absent_since); such a row gives its key to the version another day serves, whichever
 * day is later, and the version it leaves is kept in key_collisions with reason 'moved'. A row
 * that a second whole read in a later run still lacks, with no other day serving its key, is
 * marked missing_upstream_since: evidence of a deletion, kept, never deleted.
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

const TABLES = ['feedback', 'survey_answers', 'recordings'] as const;

const ABSENT_SINCE =
  "When a whole read of this row's UTC day (by dt) first lacked it, in its current absence; null while that day serves it. A row absent from its day gives its key to the version another day serves (a moved item): see docs/warehouse.md, 'Key collisions'.";
const MISSING_UPSTREAM =
  "When a second whole read of this row's UTC day in a row (in a later run than the first) still lacked it, and no other day serves its key: evidence the service no longer has the item. The row is kept, never deleted; null while its day serves it (a read that holds it again clears this).";
const REASON =
  "Why this version is not in its table: 'collision', another day's item holds the key while both are served (the later dt keeps it); 'moved', the item moved to another day and this is the version its old day no longer serves.";

export async function up(db: AnyDb): Promise<void> {
  for (const table of TABLES) {
    await db.schema.alterTable(table).addColumn('absent_since', 'timestamptz').execute();
    await sql`comment on column ${sql.ref(`${table}.absent_since`)} is ${sql.lit(ABSENT_SINCE)}`.execute(db);
    await db.schema.alterTable(table).addColumn('missing_upstream_since', 'timestamptz').execute();
    await sql`comment on column ${sql.ref(`${table}.missing_upstream_since`)} is ${sql.lit(MISSING_UPSTREAM)}`.execute(
      db,
    );
    // status counts these per source: few rows, found without reading the table.
    await sql`create index ${sql.id(`${table}_missing_upstream`)} on ${sql.table(table)} (source_id)
      where missing_upstream_since is not null`.execute(db);
  }
  await db.schema
    .alterTable('key_collisions')
    .addColumn('reason', 'text', (c) =>
      c.notNull().defaultTo('collision').check(sql`reason in ('collision', 'moved')`),
    )
    .execute();
  await sql`comment on column key_collisions.reason is ${sql.lit(REASON)}`.execute(db);
  await sql`comment on column key_collisions.run_id is ${sql.lit(
    "Run that set it aside (sync_runs); for a collision later found to be a move's left version, the run that found it (reason 'moved').",
  )}`.execute(db);
  await sql`comment on table key_collisions is ${sql.lit(
    "Versions of windowed items whose key their table gives to another version: another day's item holding the key (reason 'collision'; the later dt stays in the table), or the version a moved item left behind (reason 'moved'; the version served now stays). Kept verbatim, so nothing is lost. See docs/warehouse.md, 'Key collisions'.",
  )}`.execute(db);
  // The version an update replaces is set aside by this trigger (it alone sees the true old row);
  // a row its day no longer served is a moved item's old version, not a collision.
  await replaceSetAside(db, true);
}

export async function down(db: AnyDb): Promise<void> {
  await replaceSetAside(db, false);
  await sql`comment on column key_collisions.run_id is 'Run that first set it aside (sync_runs).'`.execute(
    db,
  );
  await db.schema.alterTable('key_collisions').dropColumn('reason').execute();
  for (const table of TABLES) {
    await sql`drop index ${sql.id(`${table}_missing_upstream`)}`.execute(db);
    await db.schema.alterTable(table).dropColumn('missing_upstream_since').execute();
    await db.schema.alterTable(table).dropColumn('absent_since').execute();
  }
}

/**
 * The trigger function with or without the reason, as 0022 left it: schema-qualified and with its
 * own search_path (CREATE OR REPLACE drops a SET clause the new definition does not name), so it
 * works whatever the writing session's search_path.
 */
async function replaceSetAside(db: AnyDb, withReason: boolean): Promise<void> {
  const { rows } = await sql<{ data: string }>`select current_schema() as data`.execute(db);
  const data = rows[0]?.data;
  if (data === undefined) throw new Error('no current schema: the connection has no search_path');
  const prefix = `"${data.replaceAll('"', '""')}".`;
  const body = `
    declare
      item_key text;
    begin
      if tg_table_name = 'feedback' then
        item_key := old.id || '/' || old.feedback_id;
      elsif tg_table_name = 'survey_answers' then
        item_key := old.id || '/' || old.question_id;
      else
        item_key := old.id;
      end if;
      insert into ${prefix}key_collisions (source_id, resource, item_key, dt, raw${withReason ? ', reason' : ''})
      values (old.source_id, tg_argv[0], item_key, old.dt, old.raw${
        withReason
          ? ",\n              case when old.absent_since is null then 'collision' else 'moved' end"
          : ''
      })
      on conflict do nothing;
      return new;
    end`;
  await sql`create or replace function ${sql.id(data, 'key_collision_set_aside')}() returns trigger
    language plpgsql set search_path = pg_catalog, pg_temp as ${sql.lit(body)}`.execute(db);
}
