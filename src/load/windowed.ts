import { sql } from 'kysely';
import type { CopyValue } from '../db/copy-text.js';
import type { LoadTransaction } from '../db/transaction.js';
import { suppressedVisitors } from '../privacy/suppression.js';
import type { ResourceTable, WindowedItem, WindowedResource } from '../schemas/resources.js';
import type { DayString } from '../time/days.js';
import { dedupeByKey } from './dedupe.js';
import { feedbackKey, feedbackRow, feedbackSpec } from './feedback.js';
import {
  clearServed,
  clearServedMarkLacked,
  forgetPromoted,
  missingMarkedNow,
  settleLeftVersions,
} from './moved-items.js';
import { recordingKey, recordingRow, recordingSpec } from './recordings.js';
import { surveyAnswerKey, surveyAnswerRow, surveyAnswerSpec } from './survey-answers.js';
import {
  type CheckedUpsertSpec,
  type StagedRows,
  stageRows,
  type UpsertCounts,
  type UpsertOptions,
  upsertStaged,
  upsertStagedReading,
} from './upsert.js';
import { loadVisitors, removeOrphanVisitors, type VisitorObservation } from './visitors.js';

interface WindowedTable<T> {
  spec: CheckedUpsertSpec;
  key: (item: T) => string;
  row: (sourceId: string, item: T) => CopyValue[];
  /** The visitor object an item carries, observed at the item's dt. */
  visitor?: (item: T) => VisitorObservation;
}

/** The item type of each windowed resource. */
export type ItemOf = { [R in WindowedResource]: WindowedItem<R> };

/** The loader of each windowed resource, writing the registry's table (src/schemas/resource-names.ts). */
const tables: { [R in WindowedResource]: WindowedTable<ItemOf[R]> & { spec: { table: ResourceTable<R> } } } =
  {
    feedback: {
      spec: feedbackSpec,
      key: feedbackKey,
      row: feedbackRow,
      visitor: (item) => ({ visitor: item.visitor, observedAt: item.dt }),
    },
    survey: {
      spec: surveyAnswerSpec,
      key: surveyAnswerKey,
      row: surveyAnswerRow,
      visitor: (item) => ({ visitor: item.visitor, observedAt: item.dt }),
    },
    recordings: { spec: recordingSpec, key: recordingKey, row: recordingRow },
  };

/** How a windowed resource's table is written (its columns, key, whether rows record their origin). */
export function windowedSpec(resource: WindowedResource): CheckedUpsertSpec {
  return tables[resource].spec;
}

export interface WindowLoadOptions extends UpsertOptions {
  /**
   * The items are the whole answer for this UTC day (isWholeDayEvidence): rows of the day it
   * lacks are absent, and their keys go to the version another day serves (src/load/moved-items.ts).
   */
  wholeDay?: DayString;
}

export interface WindowLoad extends UpsertCounts {
  /** Items that shared a key with another item of the same response. */
  duplicates: number;
  /** ... and differed from it. */
  conflicts: number;
  visitors: UpsertCounts & { conflicts: number };
  /** Items of a forgotten visitor (the suppression list, src/privacy/suppression.ts): not stored. */
  suppressed: number;
  /** Rows of the day newly marked missing_upstream_since (src/load/moved-items.ts). */
  missingUpstream: number;
}

/**
 * The window transaction's own planner settings, one statement.
 * - work_mem: the statements sort the window's rows by key (the lock order): 10,000 rows of a
 *   busy day take about 25 MB, and with the default 4MB each sort spilled to disk.
 * - no hash or merge joins: the staging tables are never analyzed, so the planner guesses their
 *   size and joined them with a whole scan (and sort) of the stored table, a cost that grew with
 *   the warehouse (a 10,000-item window into 80,000 stored rows took 40% longer than into 10,000).
 *   A nested loop probes the key's index once per staged row: the window's size, not the table's.
 */
export const WINDOW_SETTINGS =
  "set local work_mem = '32MB'; set local enable_hashjoin = off; set local enable_mergejoin = off";

/** Transactions whose settings are made. */
const settled = new WeakSet<LoadTransaction>();

/**
 * Makes the window's settings once per transaction. Called first, it opens the transaction in the
 * same round trip as `begin` (a statement without parameters, src/db/transaction.ts).
 */
export async function useWindowSettings(trx: LoadTransaction): Promise<void> {
  if (settled.has(trx)) return;
  settled.add(trx);
  await sql.raw(WINDOW_SETTINGS).execute(trx.db);
}

/** Loads one day's valid items (and their visitors) of a windowed resource. */
export async function loadWindowItems<R extends WindowedResource>(
  trx: LoadTransaction,
  resource: R,
  sourceId: string,
  items: readonly ItemOf[R][],
  options: WindowLoadOptions = {},
): Promise<WindowLoad> {
  const table = tables[resource] as WindowedTable<ItemOf[R]>;
  const visitorOf = table.visitor;
  if (items.length > 0) await useWindowSettings(trx);
  // A forgotten visitor's items are dropped before anything of them (the visitor included) is written.
  const idOf = (item: ItemOf[R]) => (visitorOf ? visitorOf(item).visitor.id : '');
  const suppressed = visitorOf ? await suppressedVisitors(trx, sourceId, items.map(idOf)) : new Set<string>();
  const kept = suppressed.size === 0 ? items : items.filter((item) => !suppressed.has(idOf(item)));
  const deduped = dedupeByKey(kept, table.key);
  const rows = deduped.items.map((item) => table.row(sourceId, item));
  const staged = await stageRows(trx, table.spec, rows);
  // Webhook-only rows whose visitor the API's copy contradicts, read by the upsert before it writes.
  const { contradicted, ...counts } = await upsertStagedReading(trx, staged, options);
  // A visitor this window names is referenced by the rows just written: never removed here.
  await removeOrphanVisitors(trx, sourceId, contradicted);
  const whole = options.wholeDay;
  // Serving an item proves it exists, whole read or not: only marking absence needs a whole one.
  if (whole === undefined && staged.count > 0) await clearServed(trx, staged);
  const left =
    whole === undefined
      ? undefined
      : await findMoves(trx, table, staged, sourceId, whole, options.runId ?? null);
  // Visitors last, read from the staged answer before a promotion stages other rows. Every window
  // of a run names the same busy visitors: a row a window writes stays locked until it commits,
  // and the next window's upsert of it waits that long, so the shorter that tail, the more
  // windows load at once. No foreign key ties the items to their visitor rows.
  const visitors = visitorOf
    ? await loadVisitors(trx, staged, deduped.items.map(visitorOf))
    : { inserted: 0, updated: 0, unchanged: 0, conflicts: 0 };
  const settled =
    left === undefined || whole === undefined
      ? { moves: 0, missingUpstream: 0 }
      : await promoteVersions(trx, table, left, sourceId, whole, options.runId ?? null);
  return {
    ...counts,
    moves: (counts.moves ?? 0) + settled.moves,
    missingUpstream: settled.missingUpstream,
    duplicates: deduped.duplicates,
    conflicts: deduped.conflicts,
    visitors,
    suppressed: items.length - kept.length,
  };
}

/** What a whole day's answer showed of moved items, before the versions other days serve are promoted. */
interface FoundMoves {
  reclassified: number;
  markedMissing: number;
  versions: unknown[];
}

/**
 * After a whole day's answer is loaded: rows it holds are served, rows of the day it lacks are
 * absent (missing upstream when a run before found them absent too), and the versions other days
 * serve of those keys (set aside earlier as collisions) are read, to take the keys over
 * (promoteVersions). Undefined for a table without collisions.
 */
async function findMoves<T>(
  trx: LoadTransaction,
  table: WindowedTable<T>,
  staged: StagedRows,
  sourceId: string,
  day: DayString,
  runId: number | null,
): Promise<FoundMoves | undefined> {
  const resource = table.spec.collisions?.resource;
  if (resource === undefined) return undefined;
  const markedMissing = await clearServedMarkLacked(trx, staged, sourceId, day);
  const { reclassified, versions } = await settleLeftVersions(trx, staged, resource, sourceId, day, runId);
  return { reclassified, markedMissing, versions };
}

/**
 * The versions findMoves read take their keys over. Returns the moves and the rows newly missing;
 * the staged answer is replaced by the promoted versions.
 */
async function promoteVersions<T>(
  trx: LoadTransaction,
  table: WindowedTable<T>,
  found: FoundMoves,
  sourceId: string,
  day: DayString,
  runId: number | null,
): Promise<{ moves: number; missingUpstream: number }> {
  const { reclassified, markedMissing, versions } = found;
  const resource = table.spec.collisions?.resource;
  // Nothing promoted: every row marked missing is still there, no count needed.
  if (versions.length === 0 || resource === undefined)
    return { moves: reclassified, missingUpstream: markedMissing };
  // Our own copies of items validated when they were first read (after the pii setting): the
  // row is built from them exactly as it was built then.
  const promoted = await stageRows(
    trx,
    table.spec,
    versions.map((raw) => table.row(sourceId, raw as T)),
  );
  const counts = await upsertStaged(trx, promoted, { runId });
  await forgetPromoted(trx, promoted, resource);
  await clearServed(trx, promoted);
  return {
    moves: reclassified + (counts.moves ?? 0),
    missingUpstream: await missingMarkedNow(trx, promoted, sourceId, day),
  };
}
