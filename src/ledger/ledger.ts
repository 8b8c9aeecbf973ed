import { sql } from 'kysely';
import type { LoadTransaction } from '../db/transaction.js';
import type { WindowedResource } from '../schemas/resources.js';

export interface WindowRecord {
  sourceId: string;
  resource: WindowedResource;
  day: string;
  /** Closed days are 'done'; today (and anything not yet over) stays 'open'. */
  status: 'done' | 'open';
  itemCount: number;
  requestedLimit: number;
  /** Most items one response for the day returned. */
  servedCount: number;
  truncated: boolean;
  rejectedCount: number;
  runId: number | null;
}

/** Records a loaded window in the ledger, in the same transaction as its rows. */
export async function recordWindow(trx: LoadTransaction, record: WindowRecord): Promise<void> {
  await trx.db
    .insertInto('sync_windows')
    .values({
      source_id: record.sourceId,
      resource: record.resource,
      day: record.day,
      status: record.status,
      item_count: record.itemCount,
      requested_limit: record.requestedLimit,
      served_count: record.servedCount,
      truncated: record.truncated,
      rejected_count: record.rejectedCount,
      attempts: 1,
      last_error: null,
      run_id: record.runId,
    })
    .onConflict((oc) =>
      oc.columns(['source_id', 'resource', 'day']).doUpdateSet((eb) => ({
        // A closed day stays closed: a run whose clock is behind (it takes the day for today,
        // 'open') must not reopen a day a watermark may already have passed.
        status: sql<
          'done' | 'open'
        >`case when sync_windows.status = 'done' then 'done' else excluded.status end`,
        item_count: eb.ref('excluded.item_count'),
        requested_limit: eb.ref('excluded.requested_limit'),
        served_count: eb.ref('excluded.served_count'),
        // A flag is never cleared by an answer that holds fewer of the day's items than the
        // flagged read: that answer may come from a reading since changed (a proof reopens it).
        truncated: sql<boolean>`excluded.truncated or (sync_windows.truncated and excluded.item_count < sync_windows.item_count)`,
        rejected_count: eb.ref('excluded.rejected_count'),
        attempts: sql<number>`sync_windows.attempts + 1`,
        last_error: null,
        fetched_at: sql<Date>`now()`,
        run_id: eb.ref('excluded.run_id'),
        // Settled again: no longer reopened, and unproved until the run's next proof.
        reopened_at: null,
        proved_at: null,
      })),
    )
    .execute();
}

export interface WindowFailure {
  sourceId: string;
  resource: WindowedResource;
  day: string;
  error: string;
  runId: number | null;
}

/**
 * Records a failed window. A day that was done stays done (its rows are still there and the
 * watermark cannot go back); the error is kept for `status`.
 */
export async function recordWindowFailure(trx: LoadTransaction, failure: WindowFailure): Promise<void> {
  await trx.db
    .insertInto('sync_windows')
    .values({
      source_id: failure.sourceId,
      resource: failure.resource,
      day: failure.day,
      status: 'failed',
      attempts: 1,
      last_error: failure.error,
      run_id: failure.runId,
    })
    .onConflict((oc) =>
      oc.columns(['source_id', 'resource', 'day']).doUpdateSet({
        status: sql<'done' | 'failed'>`case when sync_windows.status = 'done' then 'done' else 'failed' end`,
        attempts: sql<number>`sync_windows.attempts + 1`,
        last_error: failure.error,
        fetched_at: sql<Date>`now()`,
        run_id: failure.runId,
      }),
    )
    .execute();
}

/**
 * What the run's proofs found of days settled this run (src/extract/reading-session.ts): the
 * reopened are read again first; the proved stand on a proof asked after them.
 */
export async function recordProofs(
  trx: LoadTransaction,
  key: { sourceId: string; resource: WindowedResource },
  days: { reopened: readonly string[]; proved: readonly string[] },
): Promise<void> {
  const rows = (list: readonly string[]) =>
    trx.db
      .updateTable('sync_windows')
      .where('source_id', '=', key.sourceId)
      .where('resource', '=', key.resource)
      .where('day', 'in', list);
  if (days.reopened.length > 0)
    await rows(days.reopened).set({ reopened_at: sql<Date>`now()`, proved_at: null }).execute();
  if (days.proved.length > 0)
    await rows(days.proved).where('reopened_at', 'is', null).set({ proved_at: sql<Date>`now()` }).execute();
}
