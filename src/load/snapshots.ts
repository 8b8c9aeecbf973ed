import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { CopyValue } from '../db/copy-text.js';
import type { Database } from '../db/database.js';
import type { LoadTransaction } from '../db/transaction.js';
import type { Heatmap } from '../schemas/heatmap.js';
import { type ResourceTable, type SnapshotResource, tableOf } from '../schemas/resource-names.js';
import type { Test, TestKind, TestResult } from '../schemas/test.js';
import { dedupeByKey } from './dedupe.js';
import { lockSourceSnapshots, recordVersions, VERSIONED_LISTS } from './snapshot-versions.js';
import { stageRows, type UpsertCounts, type UpsertSpec, upsertRows, upsertStaged } from './upsert.js';

export interface SnapshotLoad extends UpsertCounts {
  /** Rows marked removed_at now, on evidence. */
  removed: number;
  /** Rows that had removed_at and are listed again. */
  revived: number;
  /** Rows the answer lacked, kept: one absence is not evidence (removed if the next run's answer lacks them too). */
  suspicious: number;
  conflicts: number;
}

/**
 * Snapshots remove only on evidence. A row the warehouse lists that an answer lacks (after the
 * caller's one re-read) is not removed at once: a transient `200 []` or a partial answer looks
 * exactly like a deletion. Its absence is counted instead (missing_since, missing_runs), and it
 * is removed when
 *  - a complete answer lacked it in MISSING_RUNS_TO_REMOVE runs in a row, or
 *  - (a test) its detail endpoint answers 404: the service says it does not know the test.
 * An answer with an unreadable item (in rejects) is not complete: that item may be any of the
 * rows it lacks, so nothing is judged from it and the stored rows stay as they are.
 */
const MISSING_RUNS_TO_REMOVE = 2;

/** What one answer says about the rows the warehouse lists, beyond the items it holds. */
export interface AbsenceEvidence {
  /** Read whole, every item parsed: a listed row it lacks is absent. False: no row is judged. */
  complete: boolean;
  /** Keys with evidence of deletion (their test's detail answered 404): removed now. */
  gone?: readonly string[];
  /** Keys the answer lacks but other evidence shows present (their detail answered): kept, not counted. */
  present?: readonly string[];
}

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
const testSpecs: { [K in TestKind]: UpsertSpec<ResourceTable<K>> } = {
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
 * Loads the list of A/B or personalization tests, with the absence rules above. A test removed
 * takes its results with it; one listed again is revived (its results when its detail lists them).
 * A test whose name, url, goal or removal changed gets a new version (src/load/snapshot-versions.ts).
 */
export async function loadTests(
  trx: LoadTransaction,
  kind: TestKind,
  sourceId: string,
  tests: readonly Test[],
  evidence: AbsenceEvidence,
): Promise<SnapshotLoad> {
  await lockSourceSnapshots(trx, sourceId);
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
  const scope: Scope = { table: tableOf(kind), key: 'id', where: sql`source_id = ${sourceId}` };
  const ids = items.map((t) => t.id);
  const revived = await markSeen(trx.db, scope, ids);
  const absence = await judgeAbsent(trx.db, scope, ids, evidence);
  // A removed test takes its results with it; they count as removed rows too (as they count as
  // revived rows when the test comes back and its detail lists them).
  const results =
    absence.removed.length === 0
      ? []
      : await trx.db
          .updateTable('test_results')
          .set({ removed_at: sql<Date>`now()` })
          .where('source_id', '=', sourceId)
          .where('test_kind', '=', kind)
          .where(sql<boolean>`test_id = any(${absence.removed}::text[])`)
          .where('removed_at', 'is', null)
          .returning('variant')
          .execute();
  await recordVersions(trx, VERSIONED_LISTS[kind], sourceId);
  const removed = absence.removed.length + results.length;
  return { ...counts, removed, revived, suspicious: absence.suspicious, conflicts };
}

/**
 * Loads one test's per-variant results: the current values, and the day's row of the history
 * (one row per test, variant and UTC day, holding the day's last snapshot). A variant the answer
 * lacks follows the absence rules; a malformed one (the answer is then not complete) keeps its
 * stored row as it was.
 */
export async function loadTestResults(
  trx: LoadTransaction,
  kind: TestKind,
  sourceId: string,
  testId: string,
  results: readonly TestResult[],
  day: string,
  evidence: AbsenceEvidence,
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
  const staged = await stageRows(trx, resultSpec, rows);
  const counts = await upsertStaged(trx, staged);
  const variants = items.map((r) => r.variant);
  const scope: Scope = {
    table: 'test_results',
    key: 'variant',
    where: sql`source_id = ${sourceId} and test_kind = ${kind} and test_id = ${testId}`,
  };
  const revived = await markSeen(trx.db, scope, variants);
  const absence = await judgeAbsent(trx.db, scope, variants, evidence);
  // From the staged rows, not a VALUES list: 7 parameters a variant would pass PostgreSQL's
  // 65,535 at about 9,000 variants.
  await sql`
    insert into test_result_history (source_id, test_kind, test_id, variant, day, complete, total)
    select source_id, test_kind, test_id, variant, ${day}::date, complete, total from ${sql.id(staged.stage)}
    on conflict (source_id, test_kind, test_id, variant, day) do update
      set complete = excluded.complete, total = excluded.total, captured_at = now()
      where test_result_history.complete <> excluded.complete
         or test_result_history.total <> excluded.total`.execute(trx.db);
  return { ...counts, removed: absence.removed.length, revived, suspicious: absence.suspicious, conflicts };
}

/** Loads the heatmap list; absence, removal, revival and versions as for tests (heatmaps have no detail). */
export async function loadHeatmaps(
  trx: LoadTransaction,
  sourceId: string,
  heatmaps: readonly Heatmap[],
  evidence: AbsenceEvidence,
): Promise<SnapshotLoad> {
  await lockSourceSnapshots(trx, sourceId);
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
  const scope: Scope = { table: 'heatmaps', key: 'id', where: sql`source_id = ${sourceId}` };
  const ids = items.map((h) => h.id);
  const revived = await markSeen(trx.db, scope, ids);
  const absence = await judgeAbsent(trx.db, scope, ids, evidence);
  await recordVersions(trx, VERSIONED_LISTS.heatmaps, sourceId);
  return { ...counts, removed: absence.removed.length, revived, suspicious: absence.suspicious, conflicts };
}

/** The ids of the tests or heatmaps a source's list holds and has not removed. */
export async function listedIds(
  db: Kysely<Database>,
  sourceId: string,
  list: SnapshotResource,
): Promise<Set<string>> {
  const rows = await db
    .selectFrom(tableOf(list))
    .select('id')
    .where('source_id', '=', sourceId)
    .where('removed_at', 'is', null)
    .execute();
  return new Set(rows.map((r) => r.id));
}

/** Per test of a kind: the variants its results hold and have not removed. */
export async function listedVariants(
  db: Kysely<Database>,
  sourceId: string,
  kind: TestKind,
): Promise<Map<string, Set<string>>> {
  const rows = await db
    .selectFrom('test_results')
    .select(['test_id', 'variant'])
    .where('source_id', '=', sourceId)
    .where('test_kind', '=', kind)
    .where('removed_at', 'is', null)
    .execute();
  const byTest = new Map<string, Set<string>>();
  for (const { test_id, variant } of rows) {
    const variants = byTest.get(test_id) ?? new Set<string>();
    variants.add(variant);
    byTest.set(test_id, variants);
  }
  return byTest;
}

/** The rows one answer covers: a source's list, or one test's variants. */
interface Scope {
  table: ResourceTable<SnapshotResource> | 'test_results';
  key: 'id' | 'variant';
  where: RawBuilder<unknown>;
}

/** Rows in the answer: seen now, their absence streak over, revived if removed. Returns the revived count. */
async function markSeen(db: Kysely<Database>, scope: Scope, keys: readonly string[]): Promise<number> {
  if (keys.length === 0) return 0;
  const key = sql.ref(scope.key);
  const revived = await sql<{ key: string }>`
    update ${sql.table(scope.table)} set removed_at = null
     where ${scope.where} and ${key} = any(${[...keys]}::text[]) and removed_at is not null
     returning ${key} as key`.execute(db);
  await sql`
    update ${sql.table(scope.table)} set last_seen_at = now(), missing_since = null, missing_runs = 0
     where ${scope.where} and ${key} = any(${[...keys]}::text[])`.execute(db);
  return revived.rows.length;
}

/**
 * Listed rows the answer lacks. Evidence (gone) removes at once; otherwise a complete answer
 * adds one to the row's absence streak, and the streak's MISSING_RUNS_TO_REMOVE-th run removes it.
 * Rows still kept are counted as suspicious.
 */
async function judgeAbsent(
  db: Kysely<Database>,
  scope: Scope,
  seen: readonly string[],
  evidence: AbsenceEvidence,
): Promise<{ removed: string[]; suspicious: number }> {
  const key = sql.ref(scope.key);
  const seenSet = new Set(seen);
  const gone = (evidence.gone ?? []).filter((k) => !seenSet.has(k));
  const removed: string[] = [];
  if (gone.length > 0) {
    const rows = await sql<{ key: string }>`
      update ${sql.table(scope.table)}
         set removed_at = now(), missing_since = coalesce(missing_since, now()), missing_runs = missing_runs + 1
       where ${scope.where} and ${key} = any(${gone}::text[]) and removed_at is null
       returning ${key} as key`.execute(db);
    removed.push(...rows.rows.map((r) => r.key));
  }
  if (!evidence.complete) return { removed, suspicious: 0 };
  const notAbsent = [...seen, ...gone, ...(evidence.present ?? [])];
  const counted = await sql<{ key: string; removed: boolean }>`
    update ${sql.table(scope.table)}
       set missing_runs = missing_runs + 1,
           missing_since = coalesce(missing_since, now()),
           removed_at = case when missing_runs + 1 >= ${MISSING_RUNS_TO_REMOVE} then now() end
     where ${scope.where} and removed_at is null and not (${key} = any(${notAbsent}::text[]))
     returning ${key} as key, removed_at is not null as removed`.execute(db);
  for (const row of counted.rows) if (row.removed) removed.push(row.key);
  const present = (evidence.present ?? []).filter((k) => !seenSet.has(k));
  return { removed, suspicious: counted.rows.filter((r) => !r.removed).length + present.length };
}
