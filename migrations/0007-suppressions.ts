import { type Kysely, sql } from 'kysely';

/**
 * Forget sticks, and visitors are deterministic. Frozen once shipped.
 *
 * - suppressed_visitors: the suppression list. `forget --visitor` adds the visitor (as the source
 *   stores the id: its HMAC under pii hash and drop), and the sync and the webhook receiver store
 *   nothing of a listed visitor again. No foreign key to sources: a visitor may be forgotten for
 *   a configured source before its first sync.
 * - visitors.observed_at: the dt of the observation whose attributes the row holds. An upsert
 *   only overwrites a row with an observation at least as recent, so the row ends up the same
 *   whatever order windows commit in, and a backfill of old days does not revert it. Null: only
 *   webhook deliveries (no dt) have named the visitor.
 *
 * Rows loaded before this migration get, as observed_at, the latest dt of an API row naming the
 * visitor minus one microsecond: that item, read again, replaces the attributes with its own
 * (they may have come from an older window that committed last), an older one does not.
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

const COMMENTS: Record<string, Record<string, string>> = {
  suppressed_visitors: {
    '': 'The suppression list: visitors forgotten by `insights-sync forget --visitor` (an erasure request). The sync and the webhook receiver store nothing of a listed visitor again (feedback, survey answers, visitor row, webhook delivery); `insights-sync unforget` removes an entry. One row per source and visitor id as the source stores it.',
    source_id:
      'The configured source name the entry applies to. Not a foreign key: a visitor may be forgotten for a source before its first sync.',
    visitor_id:
      "The visitor id as the source stores it (visitors.id): under the source's pii setting hash or drop the hex HMAC-SHA-256 of the service's id (a pseudonym), never the id itself; under keep the id as sent.",
    hashed:
      'True when visitor_id is the HMAC pseudonym (pii hash or drop); false when it is the id as sent (pii keep).',
    forgotten_at: 'When the visitor was forgotten (the time of the forget command).',
  },
  visitors: {
    '': 'Visitors (spec 2.6), taken from the visitor object inside feedback items, survey answers and webhook bodies. One row per source and visitor id, holding the most recent observation by the dt of its item (observed_at), whatever order the windows load in; a webhook copy (no dt) only until the API has one.',
    raw: 'The visitor object of the observation the row holds (JSON).',
    observed_at:
      'dt of the feedback or survey answer whose visitor object the row holds. A later dt replaces the row, an earlier one never does (equal: the larger JSON text wins). Null while only webhook deliveries, which carry no dt, have named the visitor.',
  },
};

/** The comments 0004 gave, for down(). */
const BEFORE: Record<string, string> = {
  '': 'Visitors (spec 2.6), taken from the visitor object inside feedback items, survey answers and webhook bodies. One row per source and visitor id; the latest copy from the API wins.',
  raw: 'The visitor object as last received (JSON).',
};

export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('suppressed_visitors')
    .addColumn('source_id', 'text', (c) => c.notNull())
    .addColumn('visitor_id', 'text', (c) => c.notNull())
    .addColumn('hashed', 'boolean', (c) => c.notNull())
    .addColumn('forgotten_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('suppressed_visitors_pkey', ['source_id', 'visitor_id'])
    .execute();

  await db.schema.alterTable('visitors').addColumn('observed_at', 'timestamptz').execute();
  await sql`
    update visitors v set observed_at = o.observed_at - interval '1 microsecond'
      from (select source_id, visitor_id, max(dt) as observed_at
              from (select source_id, visitor_id, dt from feedback where dt is not null
                    union all
                    select source_id, visitor_id, dt from survey_answers where dt is not null) items
             group by source_id, visitor_id) o
     where o.source_id = v.source_id and o.visitor_id = v.id`.execute(db);

  await comment(db, COMMENTS);
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.alterTable('visitors').dropColumn('observed_at').execute();
  await db.schema.dropTable('suppressed_visitors').execute();
  await comment(db, { visitors: BEFORE });
}

async function comment(db: AnyDb, comments: Record<string, Record<string, string>>): Promise<void> {
  for (const [table, columns] of Object.entries(comments)) {
    for (const [column, text] of Object.entries(columns)) {
      if (column === '') await sql`comment on table ${sql.table(table)} is ${sql.lit(text)}`.execute(db);
      else await sql`comment on column ${sql.ref(`${table}.${column}`)} is ${sql.lit(text)}`.execute(db);
    }
  }
}
