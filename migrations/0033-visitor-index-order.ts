import { type Kysely, sql } from 'kysely';

/**
 * The visitor indexes of feedback and survey_answers (0004) lead with visitor_id, no longer with
 * source_id. Frozen once shipped.
 *
 * A window's upsert finds each staged row's stored row by its primary key (source_id first). An
 * index that source_id alone leads to is a second way in for the planner: when the table has no
 * statistics yet (a first backfill, before autovacuum analyzes it) it costs both the same, may
 * take the visitor index, and then reads every row of the source for each staged row: a window
 * of 10,000 items ran for minutes while the other windows filled the table. Led by visitor_id,
 * the index still serves every lookup by (source, visitor), and no probe by key can use it.
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

const TABLES = ['feedback', 'survey_answers'] as const;

async function reindex(db: AnyDb, columns: string): Promise<void> {
  for (const table of TABLES) {
    const index = `${table}_visitor_idx`;
    await sql`drop index ${sql.id(index)}`.execute(db);
    await sql`create index ${sql.id(index)} on ${sql.table(table)} (${sql.raw(columns)})`.execute(db);
  }
}

export async function up(db: AnyDb): Promise<void> {
  await reindex(db, 'visitor_id, source_id');
}

export async function down(db: AnyDb): Promise<void> {
  await reindex(db, 'source_id, visitor_id');
}
