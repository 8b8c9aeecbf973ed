import { type Kysely, sql } from 'kysely';

/**
 * Snapshots remove only on evidence (src/load/snapshots.ts). A list or a detail answer that
 * lacks a row the warehouse holds is not by itself evidence that the service deleted it: a
 * transient `200 []` or a partial answer looks the same. So each snapshot row counts the runs in a
 * row whose answer lacked it, and removed_at is set only on the second such run, or at once when
 * the test's detail endpoint answers 404. Frozen once shipped, like the others.
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

const TABLES = ['ab_tests', 'personalization_tests', 'heatmaps', 'test_results'] as const;

const MISSING_SINCE =
  'When a run first found this row absent from the answer (after one re-read), in the current streak of absences; null while the row is listed. A row with missing_since set and removed_at null is kept as suspicious: one absence is not evidence of a deletion.';
const MISSING_RUNS =
  'How many runs in a row found this row absent from a complete answer (after one re-read); 0 while listed. At 2 the row gets removed_at.';
const REMOVED_LIST =
  'Set on evidence that the service deleted this row: absent from its list in 2 runs in a row (each after a re-read), or, for a test, its detail answering 404. Null while listed. Rows are kept, never deleted; a row listed again is revived (null again).';
const REMOVED_RESULT =
  'Set on evidence that the variant or its test is gone: the test removed (see its removed_at), its detail answering 404, or the variant absent from the detail answer in 2 runs in a row (each after a re-read). A malformed variant (in rejects) keeps its row as it was. Null while listed.';

/** The comments 0001/0004 gave removed_at, put back by down(). */
const OLD_REMOVED_LIST =
  'Set when a complete snapshot no longer lists this row (deleted at the service); null while it is listed. Rows are kept, never deleted.';
const OLD_REMOVED_RESULT =
  'Set when the variant is no longer in its test results, or the test is no longer listed; null while listed.';

async function comment(db: AnyDb, table: string, column: string, text: string): Promise<void> {
  await sql`comment on column ${sql.ref(`${table}.${column}`)} is ${sql.lit(text)}`.execute(db);
}

export async function up(db: AnyDb): Promise<void> {
  for (const table of TABLES) {
    await db.schema.alterTable(table).addColumn('missing_since', 'timestamptz').execute();
    await db.schema
      .alterTable(table)
      .addColumn('missing_runs', 'integer', (c) => c.notNull().defaultTo(0))
      .execute();
    await comment(db, table, 'missing_since', MISSING_SINCE);
    await comment(db, table, 'missing_runs', MISSING_RUNS);
    await comment(db, table, 'removed_at', table === 'test_results' ? REMOVED_RESULT : REMOVED_LIST);
  }
}

export async function down(db: AnyDb): Promise<void> {
  for (const table of TABLES) {
    await db.schema.alterTable(table).dropColumn('missing_runs').dropColumn('missing_since').execute();
    await comment(db, table, 'removed_at', table === 'test_results' ? OLD_REMOVED_RESULT : OLD_REMOVED_LIST);
  }
}
