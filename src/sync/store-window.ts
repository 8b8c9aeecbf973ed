import type pg from 'pg';
import { inOneStatement, type LoadTransaction } from '../db/transaction.js';
import { windowWritesOf } from '../db/write-gate.js';
import type { DayRange } from '../extract/server-reading.js';
import { isWholeDayEvidence } from '../load/moved-items.js';
import { rejectedVisitor, rejectsParameter } from '../load/rejects.js';
import {
  type ItemOf,
  WINDOW_MERGE,
  type WindowLoad,
  windowedSpec,
  windowMergeValues,
} from '../load/windowed.js';
import { suppressedVisitors } from '../privacy/suppression.js';
import type { Rejected } from '../schemas/rejected.js';
import type { WindowedResource } from '../schemas/resources.js';
import type { DayString } from '../time/days.js';

/** A fetched and validated day, ready to be written. */
export interface WindowToStore<R extends WindowedResource> {
  sourceId: string;
  baseUrl: string;
  resource: R;
  day: DayString;
  /** Closed days are 'done' (and may move the watermark); today stays 'open'. */
  status: 'done' | 'open';
  valid: readonly ItemOf[R][];
  rejected: readonly Rejected[];
  /** What the fetch saw, for the ledger. */
  requestedLimit: number;
  servedCount: number;
  /** Settled at a size no cap the reader knew covered: that size (src/extract/plan-steps.ts, FetchedDay). */
  uncappedServed?: number;
  /** The request its own answer settled the day on (src/extract/plan-steps.ts, FetchedDay). */
  settledUnder?: DayRange;
  truncated: boolean;
  runId: number | null;
  /** The watermark's range: the source's first day and today. */
  startDay: DayString;
  today: DayString;
  /** What the run's proofs found since the last window stored (src/extract/reading-session.ts). */
  proofs?: { reopened: readonly DayString[]; proved: readonly DayString[] };
  /**
   * The inventory of unknown fields, updated by the window's statement when its items carry none
   * (src/sync/schema-drift.ts, driftInWindow): their count, for the run's total.
   */
  drift?: { total: number };
}

/**
 * The window's write: its items, their visitors, its rejects, its ledger row, the watermark and
 * (given `drift`) the inventory of unknown fields, in ONE statement, the owner's function
 * store_window() (migration 0041) given the day's items once as one parameter. A statement is a transaction by itself: a crash anywhere leaves either all of
 * it or none of it, and the next run takes the day again. One round trip a window, no `begin` or
 * `commit`, and a text prepared once per connection; at most WINDOW_ROWS_AT_ONCE rows of the
 * process's windows written at once (src/db/write-gate.ts). The sync runs it for each window, the load
 * benchmark measures it.
 */
export async function storeWindow<R extends WindowedResource>(
  pool: pg.Pool,
  window: WindowToStore<R>,
): Promise<WindowLoad> {
  const { sourceId, resource, day, runId } = window;
  // Only a whole answer of the day can show that an item left it (src/load/moved-items.ts).
  const whole = isWholeDayEvidence({
    truncated: window.truncated,
    rejected: window.rejected.length,
    valid: window.valid.length,
  });
  const build = () =>
    windowMergeValues(
      resource,
      sourceId,
      window.valid,
      { runId, ...(whole ? { wholeDay: day } : {}) },
      {
        baseUrl: window.baseUrl,
        day,
        rejects: rejectsParameter(windowedSpec(resource), window.rejected),
        ledger: JSON.stringify({
          status: window.status,
          item_count: window.valid.length,
          requested_limit: window.requestedLimit,
          served_count: window.servedCount,
          uncapped_served: window.uncappedServed ?? null,
          settled_from: window.settledUnder?.startdate ?? null,
          settled_to: window.settledUnder?.enddate ?? null,
          truncated: window.truncated,
          rejected_count: window.rejected.length,
          reopened: window.proofs?.reopened ?? [],
          proved: window.proofs?.proved ?? [],
          start_day: window.startDay,
          today: window.today,
          drift: window.drift,
        }),
      },
    );
  // Its parameters are built in its turn to write (src/db/write-gate.ts), not before it: built
  // while the windows ahead of it write, the items of busy windows waiting their turn (8 in flight
  // at the default concurrency, each a string of megabytes) took the cores from the writes, and the
  // load ran 7% slower (median of 5 and 6 runs of `npm run bench -- --only load --runs 1`).
  const rows = await windowWritesOf(pool).run(window.valid.length + window.rejected.length, () =>
    inOneStatement<{ load: WindowLoad }>(pool, WINDOW_MERGE, [...build()]),
  );
  return (rows[0] as { load: WindowLoad }).load;
}

/** Rejects whose item names a visitor on the source's suppression list are dropped. */
export async function withoutForgotten(
  trx: LoadTransaction,
  sourceId: string,
  rejected: readonly Rejected[],
): Promise<Rejected[]> {
  const ids = rejected.map(rejectedVisitor).filter((id): id is string => id !== undefined);
  if (ids.length === 0) return [...rejected];
  const forgotten = await suppressedVisitors(trx, sourceId, ids);
  return rejected.filter((reject) => !forgotten.has(rejectedVisitor(reject) ?? ''));
}
