import { type Kysely, sql } from 'kysely';
import type { Database } from '../db/database.js';
import type { Heatmap } from '../schemas/heatmap.js';
import type { Test, TestKind, TestResult } from '../schemas/test.js';
import type { CopyValue } from './copy-text.js';
import { dedupeByKey } from './dedupe.js';
import type { LoadTransaction } from './transaction.js';
import { type UpsertCounts, type UpsertSpec, upsertRows } from './upsert.js';

export interface SnapshotLoad extends UpsertCounts {
  removed: number;
  conflicts: number;
}

const TEST_TABLE = { abtesting: 'ab_tests', personalization: 'personalization_tests' } as const;

const testColumns = [
  'source_id',
  'id',
  'test_name',
  'url',
  'goal_profile_id',
  'created_at',
  'updated_at',
  'raw',
] as const;
const testSpecs: { [K in TestKind]: UpsertSpec<(typeof TEST_TABLE)[K]> } = {
  abtesting: { table: 'ab_tests', key: ['source_id', 'id'], columns: testColumns, compare: ['raw'] },
  personalization: {
    table: 'personalization_tests',
    key: ['source_id', 'id'],
    columns: testColumns,
    compare: ['raw'],
  },
};

const heatmapSpec: UpsertSpec<'heatmaps'> = {
  table: 'heatmaps',
  key: ['source_id', 'id'],
  columns: [
    'source_id',
    'id',
    'name',
    'url',
    'rule',
    'start_time',
    'end_time',
    'heatmap_limit',
    'created_at',
    'updated_at',
    'raw',
  ],
  compare: ['raw'],
};

const resultSpec: UpsertSpec<'test_results'> = {
  table: 'test_results',
  key: ['source_id', 'test_kind', 'test_id', 'variant'],
  columns: ['source_id', 'test_kind', 'test_id', 'variant', 'complete', 'total', 'raw'],
  compare: ['raw'],
};

/**
 * Loads the list of A/B or personalization tests. When the list is complete (fetched and parsed
 * without loss), a test missing from it gets removed_at, and so do its results; one that comes
 * back is revived.
 */
export async function loadTests(
  trx: LoadTransaction,
  kind: TestKind,
  sourceId: string,
  tests: readonly Test[],
  complete: boolean,
): Promise<SnapshotLoad> {
  const { items, conflicts } = dedupeByKey(tests, (t) => t.id);
  const rows = items.map((t): CopyValue[] => [
    sourceId,
    t.id,
    t.test_name,
    t.url,
    t.goal_profile_id,
    t.created_at,
    t.updated_at,
    JSON.stringify(t),
  ]);
  const counts = await upsertRows(trx, testSpecs[kind], rows);
  const ids = items.map((t) => t.id);
  const table = TEST_TABLE[kind];
  await touch(trx.db, table, sourceId, ids);
  let removed = 0;
  if (complete) {
    const gone = await markRemoved(trx.db, table, sourceId, ids);
    removed = gone.length;
    if (gone.length > 0) {
      await trx.db
        .updateTable('test_results')
        .set({ removed_at: sql<Date>`now()` })
        .where('source_id', '=', sourceId)
        .where('test_kind', '=', kind)
        .where('test_id', 'in', gone)
        .where('removed_at', 'is', null)
        .execute();
    }
  }
  return { ...counts, removed, conflicts };
}

/**
 * Loads one test's per-variant results: the current values, and the day's row of the history
 * (one row per test, variant and UTC day, holding the day's last snapshot).
 */
export async function loadTestResults(
  trx: LoadTransaction,
  kind: TestKind,
  sourceId: string,
  testId: string,
  results: readonly TestResult[],
  day: string,
): Promise<SnapshotLoad> {
  const { items, conflicts } = dedupeByKey(results, (r) => r.variant);
  const rows = items.map((r): CopyValue[] => [
    sourceId,
    kind,
    testId,
    r.variant,
    r.complete,
    r.total,
    JSON.stringify(r),
  ]);
  const counts = await upsertRows(trx, resultSpec, rows);
  const variants = items.map((r) => r.variant);
  const scope = trx.db
    .updateTable('test_results')
    .where('source_id', '=', sourceId)
    .where('test_kind', '=', kind)
    .where('test_id', '=', testId);
  if (variants.length > 0) {
    await scope
      .set({ last_seen_at: sql<Date>`now()`, removed_at: null })
      .where('variant', 'in', variants)
      .execute();
  }
  const gone = await scope
    .set({ removed_at: sql<Date>`now()` })
    .where('removed_at', 'is', null)
    .$if(variants.length > 0, (qb) => qb.where('variant', 'not in', variants))
    .returning('variant')
    .execute();
  if (items.length > 0) {
    await trx.db
      .insertInto('test_result_history')
      .values(
        items.map((r) => ({
          source_id: sourceId,
          test_kind: kind,
          test_id: testId,
          variant: r.variant,
          day,
          complete: r.complete,
          total: r.total,
        })),
      )
      .onConflict((oc) =>
        oc
          .columns(['source_id', 'test_kind', 'test_id', 'variant', 'day'])
          .doUpdateSet((eb) => ({
            complete: eb.ref('excluded.complete'),
            total: eb.ref('excluded.total'),
            captured_at: sql<Date>`now()`,
          }))
          .where((eb) =>
            eb.or([
              eb('test_result_history.complete', '!=', eb.ref('excluded.complete')),
              eb('test_result_history.total', '!=', eb.ref('excluded.total')),
            ]),
          ),
      )
      .execute();
  }
  return { ...counts, removed: gone.length, conflicts };
}

/** Loads the heatmap list; removal and revival as for tests. */
export async function loadHeatmaps(
  trx: LoadTransaction,
  sourceId: string,
  heatmaps: readonly Heatmap[],
  complete: boolean,
): Promise<SnapshotLoad> {
  const { items, conflicts } = dedupeByKey(heatmaps, (h) => h.id);
  const rows = items.map((h): CopyValue[] => [
    sourceId,
    h.id,
    h.name,
    h.url,
    h.rule,
    h.start_time,
    h.end_time,
    h.heatmap_limit,
    h.created_at,
    h.updated_at,
    JSON.stringify(h),
  ]);
  const counts = await upsertRows(trx, heatmapSpec, rows);
  const ids = items.map((h) => h.id);
  await touch(trx.db, 'heatmaps', sourceId, ids);
  const removed = complete ? (await markRemoved(trx.db, 'heatmaps', sourceId, ids)).length : 0;
  return { ...counts, removed, conflicts };
}

type SnapshotTable = 'ab_tests' | 'personalization_tests' | 'heatmaps';

/** Snapshot rows seen this run: last seen now, and no longer removed. */
async function touch(
  db: Kysely<Database>,
  table: SnapshotTable,
  sourceId: string,
  ids: string[],
): Promise<void> {
  if (ids.length === 0) return;
  await db
    .updateTable(table)
    .set({ last_seen_at: sql<Date>`now()`, removed_at: null })
    .where('source_id', '=', sourceId)
    .where('id', 'in', ids)
    .execute();
}

/** Rows a complete snapshot no longer lists get removed_at (they are kept, not deleted). */
async function markRemoved(
  db: Kysely<Database>,
  table: SnapshotTable,
  sourceId: string,
  seen: string[],
): Promise<string[]> {
  const rows = await db
    .updateTable(table)
    .set({ removed_at: sql<Date>`now()` })
    .where('source_id', '=', sourceId)
    .where('removed_at', 'is', null)
    .$if(seen.length > 0, (qb) => qb.where('id', 'not in', seen))
    .returning('id')
    .execute();
  return rows.map((row) => row.id);
}
