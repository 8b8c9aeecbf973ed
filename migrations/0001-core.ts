import { type CreateTableBuilder, type Kysely, sql } from 'kysely';

/**
 * The core warehouse. Frozen: never edit a migration that has shipped; add a new one.
 *
 * Tables are created unqualified: the connection's search_path is the warehouse schema
 * (INSIGHTS_SCHEMA), so one set of migrations serves any schema name.
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

const now = sql`now()`;

export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('sources')
    .addColumn('source_id', 'text', (c) => c.primaryKey())
    .addColumn('base_url', 'text', (c) => c.notNull())
    .addColumn('first_seen_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .execute();

  for (const table of ['ab_tests', 'personalization_tests']) {
    await db.schema
      .createTable(table)
      .addColumn('source_id', 'text', (c) => c.notNull().references('sources.source_id'))
      .addColumn('id', 'text', (c) => c.notNull())
      .addColumn('test_name', 'text', (c) => c.notNull())
      .addColumn('url', 'text', (c) => c.notNull())
      .addColumn('goal_profile_id', 'text', (c) => c.notNull())
      .addColumn('created_at', 'timestamptz', (c) => c.notNull())
      .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
      .$call(snapshotBookkeeping)
      .addPrimaryKeyConstraint(`${table}_pkey`, ['source_id', 'id'])
      .execute();
  }

  await db.schema
    .createTable('test_results')
    .addColumn('source_id', 'text', (c) => c.notNull().references('sources.source_id'))
    .addColumn('test_kind', 'text', (c) =>
      c.notNull().check(sql`test_kind in ('abtesting', 'personalization')`),
    )
    .addColumn('test_id', 'text', (c) => c.notNull())
    .addColumn('variant', 'text', (c) => c.notNull())
    .addColumn('complete', 'bigint', (c) => c.notNull())
    .addColumn('total', 'bigint', (c) => c.notNull())
    .$call(snapshotBookkeeping)
    .addPrimaryKeyConstraint('test_results_pkey', ['source_id', 'test_kind', 'test_id', 'variant'])
    .execute();

  await db.schema
    .createTable('test_result_history')
    .addColumn('source_id', 'text', (c) => c.notNull().references('sources.source_id'))
    .addColumn('test_kind', 'text', (c) =>
      c.notNull().check(sql`test_kind in ('abtesting', 'personalization')`),
    )
    .addColumn('test_id', 'text', (c) => c.notNull())
    .addColumn('variant', 'text', (c) => c.notNull())
    .addColumn('day', 'date', (c) => c.notNull())
    .addColumn('complete', 'bigint', (c) => c.notNull())
    .addColumn('total', 'bigint', (c) => c.notNull())
    .addColumn('captured_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .addPrimaryKeyConstraint('test_result_history_pkey', [
      'source_id',
      'test_kind',
      'test_id',
      'variant',
      'day',
    ])
    .execute();

  await db.schema
    .createTable('visitors')
    .addColumn('source_id', 'text', (c) => c.notNull().references('sources.source_id'))
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('name', 'text')
    .addColumn('company', 'text')
    .addColumn('email', 'text')
    .addColumn('ip', 'text')
    .addColumn('user_agent', 'text')
    .addColumn('landing_page', 'text')
    .addColumn('ref_page', 'text')
    .addColumn('created_at', 'timestamptz')
    .addColumn('device', 'text')
    .addColumn('browser', 'text')
    .addColumn('os', 'text')
    .$call(windowBookkeeping)
    .addPrimaryKeyConstraint('visitors_pkey', ['source_id', 'id'])
    .execute();

  // dt, url, rating and rating_text are nullable: a webhook delivery (spec 6) lacks them.
  await db.schema
    .createTable('feedback')
    .addColumn('source_id', 'text', (c) => c.notNull().references('sources.source_id'))
    .addColumn('id', 'bigint', (c) => c.notNull())
    .addColumn('feedback_id', 'bigint', (c) => c.notNull())
    .addColumn('question', 'text')
    .addColumn('session', 'text')
    .addColumn('comment', 'text')
    .addColumn('rating', 'integer')
    .addColumn('rating_text', 'text')
    .addColumn('dt', 'timestamptz')
    .addColumn('url', 'text')
    .addColumn('screenshot', 'text')
    .addColumn('visitor_id', 'text')
    .$call(windowBookkeeping)
    .addPrimaryKeyConstraint('feedback_pkey', ['source_id', 'id', 'feedback_id'])
    .execute();

  await db.schema
    .createTable('survey_answers')
    .addColumn('source_id', 'text', (c) => c.notNull().references('sources.source_id'))
    .addColumn('id', 'bigint', (c) => c.notNull())
    .addColumn('question_id', 'bigint', (c) => c.notNull())
    .addColumn('question', 'text')
    .addColumn('session', 'text')
    .addColumn('comment', 'text')
    .addColumn('dt', 'timestamptz')
    .addColumn('url', 'text')
    .addColumn('visitor_id', 'text')
    .$call(windowBookkeeping)
    .addPrimaryKeyConstraint('survey_answers_pkey', ['source_id', 'id', 'question_id'])
    .execute();

  await db.schema
    .createTable('recordings')
    .addColumn('source_id', 'text', (c) => c.notNull().references('sources.source_id'))
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('duration', 'integer', (c) => c.notNull())
    .addColumn('landing_page', 'text', (c) => c.notNull())
    .addColumn('referral', 'text', (c) => c.notNull())
    .addColumn('country', 'text', (c) => c.notNull())
    .addColumn('city', 'text', (c) => c.notNull())
    .addColumn('user_ip', 'text', (c) => c.notNull())
    .addColumn('user_agent', 'text', (c) => c.notNull())
    .addColumn('dt', 'timestamptz', (c) => c.notNull())
    .addColumn('video_link', 'text', (c) => c.notNull())
    .$call(windowBookkeeping)
    .addPrimaryKeyConstraint('recordings_pkey', ['source_id', 'id'])
    .execute();

  await db.schema
    .createTable('heatmaps')
    .addColumn('source_id', 'text', (c) => c.notNull().references('sources.source_id'))
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('rule', 'text', (c) => c.notNull())
    .addColumn('start_time', 'timestamptz', (c) => c.notNull())
    .addColumn('end_time', 'timestamptz')
    .addColumn('heatmap_limit', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .$call(snapshotBookkeeping)
    .addPrimaryKeyConstraint('heatmaps_pkey', ['source_id', 'id'])
    .execute();

  await db.schema
    .createTable('sync_runs')
    .addColumn('run_id', 'bigserial', (c) => c.primaryKey())
    .addColumn('trigger', 'text', (c) => c.notNull().check(sql`trigger in ('sync', 'backfill', 'schedule')`))
    .addColumn('status', 'text', (c) =>
      c.notNull().check(sql`status in ('running', 'ok', 'partial', 'failed', 'interrupted')`),
    )
    .addColumn('started_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .addColumn('finished_at', 'timestamptz')
    .addColumn('from_day', 'date')
    .addColumn('to_day', 'date')
    .addColumn('summary', 'jsonb')
    .addColumn('error', 'text')
    .execute();

  await db.schema
    .createTable('sync_windows')
    .addColumn('source_id', 'text', (c) => c.notNull().references('sources.source_id'))
    .addColumn('resource', 'text', (c) =>
      c.notNull().check(sql`resource in ('feedback', 'survey', 'recordings')`),
    )
    .addColumn('day', 'date', (c) => c.notNull())
    // 'open' = fetched but not closed (today): it is fetched again and never counts as done.
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('done', 'open', 'failed')`))
    .addColumn('item_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('requested_limit', 'integer')
    .addColumn('truncated', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('rejected_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('last_error', 'text')
    .addColumn('fetched_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .addColumn('run_id', 'bigint', (c) => c.references('sync_runs.run_id'))
    .addPrimaryKeyConstraint('sync_windows_pkey', ['source_id', 'resource', 'day'])
    .execute();

  await db.schema
    .createTable('watermarks')
    .addColumn('source_id', 'text', (c) => c.notNull().references('sources.source_id'))
    .addColumn('resource', 'text', (c) =>
      c.notNull().check(sql`resource in ('feedback', 'survey', 'recordings')`),
    )
    .addColumn('start_day', 'date', (c) => c.notNull())
    // The last day through which every day since start_day is done; null until the first one is.
    .addColumn('day', 'date')
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .addPrimaryKeyConstraint('watermarks_pkey', ['source_id', 'resource'])
    .execute();

  // The watermark only moves forward whatever statement tries otherwise.
  await sql`
    create function watermark_forward_only() returns trigger language plpgsql as $$
    begin
      if old.day is not null and (new.day is null or new.day < old.day) then
        raise exception 'watermark for %/% may not move backward from % to %',
          old.source_id, old.resource, old.day, new.day using errcode = 'check_violation';
      end if;
      return new;
    end $$`.execute(db);
  await sql`
    create trigger watermarks_forward_only before update on watermarks
    for each row execute function watermark_forward_only()`.execute(db);

  await db.schema
    .createTable('rejects')
    .addColumn('source_id', 'text', (c) => c.notNull().references('sources.source_id'))
    .addColumn('resource', 'text', (c) => c.notNull())
    // md5 of the item's canonical JSON: the same bad item seen again is one row, not two.
    .addColumn('item_hash', 'text', (c) => c.notNull())
    .addColumn('day', 'date')
    .addColumn('item', 'jsonb', (c) => c.notNull())
    .addColumn('error', 'text', (c) => c.notNull())
    .addColumn('first_seen_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .addColumn('run_id', 'bigint', (c) => c.references('sync_runs.run_id'))
    .addPrimaryKeyConstraint('rejects_pkey', ['source_id', 'resource', 'item_hash'])
    .execute();
}

/** Snapshot tables see every item on every run, so last_seen_at is cheap to keep per row. */
function snapshotBookkeeping<T extends string, C extends string>(table: CreateTableBuilder<T, C>) {
  return table
    .addColumn('raw', 'jsonb', (c) => c.notNull())
    .addColumn('first_seen_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .addColumn('last_seen_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .addColumn('last_changed_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .addColumn('removed_at', 'timestamptz');
}

/**
 * Day-windowed tables: an unchanged row is never rewritten (re-syncs stay cheap and bloat-free),
 * so "last seen" is the ledger's fetched_at for the row's day, not a per-row column.
 */
function windowBookkeeping<T extends string, C extends string>(table: CreateTableBuilder<T, C>) {
  return table
    .addColumn('raw', 'jsonb', (c) => c.notNull())
    .addColumn('first_seen_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .addColumn('last_changed_at', 'timestamptz', (c) => c.notNull().defaultTo(now));
}

export async function down(db: AnyDb): Promise<void> {
  for (const table of [
    'rejects',
    'watermarks',
    'sync_windows',
    'sync_runs',
    'heatmaps',
    'recordings',
    'survey_answers',
    'feedback',
    'visitors',
    'test_result_history',
    'test_results',
    'personalization_tests',
    'ab_tests',
    'sources',
  ]) {
    await db.schema.dropTable(table).execute();
  }
  await sql`drop function watermark_forward_only()`.execute(db);
}
