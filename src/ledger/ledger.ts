import { type Kysely, sql } from 'kysely';
import type { Database } from '../db/database.js';
import type { LoadTransaction } from '../db/transaction.js';
import type { WindowedResource } from '../schemas/resources.js';

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

/** A day reopened: read again first by a run, and standing on no proof until then. */
function reopening() {
  return { reopened_at: sql<Date>`now()`, proved_at: null };
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
  if (days.reopened.length > 0) await rows(days.reopened).set(reopening()).execute();
  if (days.proved.length > 0)
    await rows(days.proved).where('reopened_at', 'is', null).set({ proved_at: sql<Date>`now()` }).execute();
}

/**
 * Days settled whole at exactly `cap` items while no cap their reader knew covered that size
 * (uncapped_served), in any run and of any of the source's resources (a cap is the server's):
 * now that `cap` is proved, their answers may have been cut by it. A deploy that lowered the cap
 * while the run that read them read, which that run never proved, leaves such days; the run that
 * proves the cap reopens them, and the next run reads them first. Returns how many.
 */
export async function reopenSettledAtCap(
  db: Kysely<Database>,
  sourceId: string,
  cap: number,
): Promise<number> {
  const result = await db
    .updateTable('sync_windows')
    .set(reopening())
    .where('source_id', '=', sourceId)
    .where('status', '=', 'done')
    .where('truncated', '=', false)
    .where('reopened_at', 'is', null)
    .where('uncapped_served', '=', cap)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}
