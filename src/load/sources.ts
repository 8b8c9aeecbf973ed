import type { LoadTransaction } from '../db/transaction.js';

/**
 * Makes sure the source's row exists before rows that reference it. DO NOTHING on conflict
 * takes no row lock, so the per-window call costs no write once the row is there.
 */
export async function ensureSource(trx: LoadTransaction, sourceId: string, baseUrl: string): Promise<void> {
  await trx.db
    .insertInto('sources')
    .values({ source_id: sourceId, base_url: baseUrl })
    .onConflict((oc) => oc.column('source_id').doNothing())
    .execute();
}
