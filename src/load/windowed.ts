import { type LoadTransaction, preparedStatement } from '../db/transaction.js';
import type { ResourceTable, WindowedItem, WindowedResource } from '../schemas/resources.js';
import type { DayString } from '../time/days.js';
import { bestCopyFirst } from './dedupe.js';
import { feedbackKey, feedbackSpec } from './feedback.js';
import { recordingKey, recordingSpec } from './recordings.js';
import { surveyAnswerKey, surveyAnswerSpec } from './survey-answers.js';
import type { CheckedUpsertSpec, UpsertCounts, UpsertOptions } from './upsert.js';

interface WindowedTable<T> {
  spec: CheckedUpsertSpec;
  key: (item: T) => string;
}

/** The item type of each windowed resource. */
export type ItemOf = { [R in WindowedResource]: WindowedItem<R> };

/** The loader of each windowed resource, writing the registry's table (src/schemas/resource-names.ts). */
const tables: { [R in WindowedResource]: WindowedTable<ItemOf[R]> & { spec: { table: ResourceTable<R> } } } =
  {
    feedback: { spec: feedbackSpec, key: feedbackKey },
    survey: { spec: surveyAnswerSpec, key: surveyAnswerKey },
    recordings: { spec: recordingSpec, key: recordingKey },
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
  /** Why the inventory's update in the window's statement failed (store_window, migration 0047). */
  driftError?: string;
  /**
   * Rows of the day the run stored (another of its answers served them) that this whole answer
   * lacked: the answer was not taken as whole, and the day was flagged truncated and reopened
   * (store_window, migration 0053).
   */
  lacking?: number;
}

/**
 * The window's merge, one call of the owner's function store_window() (migration 0041), which
 * runs the loader's statements on the server in the caller's transaction:
 * - a forgotten visitor's items are dropped before anything of them (the visitor included) is
 *   written (src/privacy/suppression.ts);
 * - the items are upserted, in key order, a row only a webhook had seen completed, cross-day key
 *   collisions set aside (src/load/upsert.ts); webhook visitors the API contradicts and no row
 *   names any more removed (src/load/visitors.ts);
 * - a whole day's answer marks the rows it lacks absent and promotes the versions other days
 *   serve; any answer clears the marks of the rows it serves (src/load/moved-items.ts);
 * - the visitors last, read from the staged answer and merged by merge_visitors() (migration
 *   0043, the webhooks' visitor merge too: src/load/visitors.ts): every window of a run names
 *   the same busy visitors, and a row a window writes stays locked until it commits, so the
 *   shorter that tail, the more windows load at once;
 * - its planner settings are the function's own: work_mem for sorting 10,000 rows by key (the
 *   lock order) without spilling; no hash or merge joins, since the staging tables are never
 *   analyzed and a guess joined them with a whole scan of the stored table, a cost that grew with
 *   the warehouse. A nested loop probes the key's index once per staged row.
 * The statement's text is the same for every window: prepared once per connection.
 */
export const WINDOW_MERGE = preparedStatement(
  'select store_window($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) as load',
);

/** What store_window() takes besides the items: the ledger's part (storeWindow) and the rejects. */
export interface WindowMergeExtras {
  /** The source's row is made when missing (its base URL), before rows that reference it. */
  baseUrl: string | null;
  day: DayString | null;
  rejects: string | null;
  ledger: string | null;
}

/** The parameters of WINDOW_MERGE. */
export function windowMergeValues<R extends WindowedResource>(
  resource: R,
  sourceId: string,
  items: readonly ItemOf[R][],
  options: WindowLoadOptions,
  extras: WindowMergeExtras,
): unknown[] {
  const table = tables[resource] as WindowedTable<ItemOf[R]>;
  return [
    sourceId,
    extras.baseUrl,
    resource,
    extras.day ?? options.wholeDay ?? null,
    // One serialisation of the whole answer: each item's own JSON is its row's raw copy.
    JSON.stringify(bestCopyFirst(items, table.key)),
    options.wholeDay !== undefined,
    options.mode ?? 'update',
    options.runId ?? null,
    extras.rejects,
    extras.ledger,
  ];
}

/** Loads one day's valid items (and their visitors) of a windowed resource. */
export async function loadWindowItems<R extends WindowedResource>(
  trx: LoadTransaction,
  resource: R,
  sourceId: string,
  items: readonly ItemOf[R][],
  options: WindowLoadOptions = {},
): Promise<WindowLoad> {
  const values = windowMergeValues(resource, sourceId, items, options, {
    baseUrl: null,
    day: null,
    rejects: null,
    ledger: null,
  });
  const { rows } = await trx.query(WINDOW_MERGE, values);
  return (rows[0] as { load: WindowLoad }).load;
}
