import { type Kysely, sql } from 'kysely';

/**
 * What the tool learns about each server where the spec is silent (bounds, server day, order,
 * caps), the ledger's served counts, and items whose keys collide across days. Frozen once
 * shipped, like the others.
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

const RESOURCE_CHECK = sql`resource in ('feedback', 'survey', 'recordings')`;

const COMMENTS: Record<string, Record<string, string>> = {
  server_readings: {
    '': 'What insights-sync has learned, from the items servers returned, about how one source reads the spec points it leaves open (section 4 and 8: date bounds, server day, ordering, the maximum limit). One row per source and windowed resource; shown by `insights-sync status`.',
    source_id: 'The configured source name.',
    resource: 'Windowed resource: feedback, survey or recordings.',
    head_ms:
      "Earliest returned item, in milliseconds after the UTC midnight of its request's startdate (smallest seen). Below 10 hours proves startdate inclusive; below 0 proves a server day that starts before UTC midnight. Null until an item was seen.",
    tail_ms:
      "Latest returned item, in milliseconds after the UTC midnight of its request's enddate (largest seen). 12 hours or more proves enddate inclusive; 24 hours or more (inclusive), or 0 or more (exclusive), a server day that ends after UTC midnight. Null until an item was seen.",
    start_inclusive: 'Whether startdate is proved inclusive (derived from head_ms).',
    end_inclusive: 'Whether enddate is proved inclusive (derived from tail_ms).',
    server_day:
      "How the server's day sits against the UTC day: utc (proved by items within 15 minutes of a bound's midnight), early (starts before UTC midnight) or late (after it): each UTC day is then read from two server days; unknown until proved: read from three.",
    item_order:
      'Order in which the server lists items: oldest-first, newest-first, unordered (not one order), or null before a response with two dated items.',
    cap: 'Most items the server returns in one response, proved in the last run (a wider request came back no larger while holding other items); null when no cap was seen below the limits asked.',
    largest_response:
      'Most items seen in one response in the last run: the server can serve at least this many.',
    limit_refused:
      'Smallest limit the server answered with HTTP 400 (above its maximum); null if none was refused.',
    updated_at: 'When this row was last written.',
  },
  key_collisions: {
    '': "Items whose natural key was already taken by an item of another day (the spec does not promise unique ids). The item with the later dt stays in its table; every other version is kept here verbatim, so nothing is lost. See docs/warehouse.md, 'Key collisions'.",
    source_id: 'The configured source name.',
    resource: 'Windowed resource: feedback, survey or recordings.',
    item_key: 'The natural key without the source, joined with /: id/feedback_id, id/question_id or id.',
    dt: 'The dt of this version (not the one in the table).',
    raw: 'This version of the item, verbatim as served (after the pii setting).',
    first_seen_at: 'When this version was first set aside.',
    run_id: 'Run that first set it aside (sync_runs).',
  },
  sync_windows: {
    served_count:
      'Most items one response for this day returned (all days it covered). A truncated day is fetched again once the server has served more than this in one response, or INSIGHTS_MAX_LIMIT rises above requested_limit.',
  },
};

export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('server_readings')
    .addColumn('source_id', 'text', (c) => c.notNull().references('sources.source_id'))
    .addColumn('resource', 'text', (c) => c.notNull().check(RESOURCE_CHECK))
    .addColumn('head_ms', 'bigint')
    .addColumn('tail_ms', 'bigint')
    .addColumn('start_inclusive', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('end_inclusive', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('server_day', 'text', (c) =>
      c.notNull().defaultTo('unknown').check(sql`server_day in ('utc', 'early', 'late', 'unknown')`),
    )
    .addColumn('item_order', 'text', (c) =>
      c.check(sql`item_order in ('oldest-first', 'newest-first', 'unordered')`),
    )
    .addColumn('cap', 'integer')
    .addColumn('largest_response', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('limit_refused', 'integer')
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('server_readings_pkey', ['source_id', 'resource'])
    .execute();

  await db.schema
    .createTable('key_collisions')
    .addColumn('source_id', 'text', (c) => c.notNull().references('sources.source_id'))
    .addColumn('resource', 'text', (c) => c.notNull().check(RESOURCE_CHECK))
    .addColumn('item_key', 'text', (c) => c.notNull())
    .addColumn('dt', 'timestamptz', (c) => c.notNull())
    .addColumn('raw', 'jsonb', (c) => c.notNull())
    .addColumn('first_seen_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('run_id', 'bigint', (c) => c.references('sync_runs.run_id'))
    .addPrimaryKeyConstraint('key_collisions_pkey', ['source_id', 'resource', 'item_key', 'dt'])
    .execute();

  await db.schema.alterTable('sync_windows').addColumn('served_count', 'integer').execute();

  // The rule "the later dt keeps the key" is applied in the upsert's ON CONFLICT clause, which
  // sees the committed row even when a concurrent window inserted it; the version an update
  // replaces is kept here by a trigger, which alone sees the true old row, whatever the race.
  await sql`
    create function key_collision_set_aside() returns trigger language plpgsql as $$
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
      insert into key_collisions (source_id, resource, item_key, dt, raw)
      values (old.source_id, tg_argv[0], item_key, old.dt, old.raw)
      on conflict do nothing;
      return new;
    end $$`.execute(db);
  for (const [table, resource] of [
    ['feedback', 'feedback'],
    ['survey_answers', 'survey'],
    ['recordings', 'recordings'],
  ] as const) {
    await sql`
      create trigger ${sql.id(`${table}_key_collision`)} after update on ${sql.table(table)}
      for each row when (old.dt is not null and new.dt is not null
        and (old.dt at time zone 'UTC')::date <> (new.dt at time zone 'UTC')::date)
      execute function key_collision_set_aside(${sql.lit(resource)})`.execute(db);
  }

  for (const [table, columns] of Object.entries(COMMENTS)) {
    for (const [column, comment] of Object.entries(columns)) {
      if (column === '') await sql`comment on table ${sql.table(table)} is ${sql.lit(comment)}`.execute(db);
      else await sql`comment on column ${sql.ref(`${table}.${column}`)} is ${sql.lit(comment)}`.execute(db);
    }
  }
}

export async function down(db: AnyDb): Promise<void> {
  for (const table of ['feedback', 'survey_answers', 'recordings'])
    await sql`drop trigger ${sql.id(`${table}_key_collision`)} on ${sql.table(table)}`.execute(db);
  await sql`drop function key_collision_set_aside()`.execute(db);
  await db.schema.alterTable('sync_windows').dropColumn('served_count').execute();
  await db.schema.dropTable('key_collisions').execute();
  await db.schema.dropTable('server_readings').execute();
}
