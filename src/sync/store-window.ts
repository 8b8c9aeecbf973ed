import type pg from 'pg';
import { inTransaction, type LoadTransaction } from '../db/transaction.js';
import { recordProofs, recordWindow } from '../ledger/ledger.js';
import { advanceWatermark } from '../ledger/watermark.js';
import { isWholeDayEvidence } from '../load/moved-items.js';
import { loadRejects } from '../load/rejects.js';
import { ensureSource } from '../load/sources.js';
import { markSupersededByRejects } from '../load/superseded-rows.js';
import {
  type ItemOf,
  loadWindowItems,
  useWindowSettings,
  type WindowLoad,
  windowedSpec,
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
  truncated: boolean;
  runId: number | null;
  /** The watermark's range: the source's first day and today. */
  startDay: DayString;
  today: DayString;
  /** What the run's proofs found since the last window stored (src/extract/reading-session.ts). */
  proofs?: { reopened: readonly DayString[]; proved: readonly DayString[] };
}

/**
 * The window transaction: in ONE transaction its items, their visitors, its rejects, its ledger
 * row and the watermark. A crash anywhere leaves either all of it or none of it, and the next
 * run takes the day again. The sync runs it for each window, the load benchmark measures it.
 */
export async function storeWindow<R extends WindowedResource>(
  pool: pg.Pool,
  window: WindowToStore<R>,
): Promise<WindowLoad> {
  const { sourceId, resource, day, runId } = window;
  return inTransaction(pool, async (trx) => {
    // Before anything with parameters: it goes in one round trip with the transaction's begin.
    if (window.valid.length > 0) await useWindowSettings(trx);
    await ensureSource(trx, sourceId, window.baseUrl);
    // Only a whole answer of the day can show that an item left it (src/load/moved-items.ts).
    const whole = isWholeDayEvidence({
      truncated: window.truncated,
      rejected: window.rejected.length,
      valid: window.valid.length,
    });
    const counts = await loadWindowItems(trx, resource, sourceId, window.valid, {
      runId,
      ...(whole ? { wholeDay: day } : {}),
    });
    // A forgotten visitor's items stay out of rejects too (the suppression list, forget).
    const rejected = await withoutForgotten(trx, sourceId, window.rejected);
    await loadRejects(trx, { sourceId, resource, day, runId }, rejected);
    // After the items: a row this read serves both valid and refused ends up marked stale.
    await markSupersededByRejects(trx, windowedSpec(resource), sourceId, day, rejected);
    await recordWindow(trx, {
      sourceId,
      resource,
      day,
      status: window.status,
      itemCount: window.valid.length,
      requestedLimit: window.requestedLimit,
      servedCount: window.servedCount,
      truncated: window.truncated,
      rejectedCount: window.rejected.length,
      runId,
    });
    if (window.proofs !== undefined) await recordProofs(trx, { sourceId, resource }, window.proofs);
    if (window.status === 'done')
      await advanceWatermark(trx.db, sourceId, resource, window.startDay, window.today);
    return counts;
  });
}

/** Rejects whose item names a visitor on the source's suppression list are dropped. */
export async function withoutForgotten(
  trx: LoadTransaction,
  sourceId: string,
  rejected: readonly Rejected[],
): Promise<Rejected[]> {
  const visitorOf = (reject: Rejected): string | undefined => {
    const visitor = (reject.item as { visitor?: { id?: unknown } } | null)?.visitor;
    return typeof visitor?.id === 'string' ? visitor.id : undefined;
  };
  const ids = rejected.map(visitorOf).filter((id): id is string => id !== undefined);
  if (ids.length === 0) return [...rejected];
  const forgotten = await suppressedVisitors(trx, sourceId, ids);
  return rejected.filter((reject) => !forgotten.has(visitorOf(reject) ?? ''));
}
