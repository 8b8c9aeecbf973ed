import { type Kysely, sql } from 'kysely';
import type { Database } from '../db/database.js';
import { inDbTransaction, type LoadTransaction } from '../db/transaction.js';

/**
 * The suppression list (table suppressed_visitors, migration 0007): visitors forgotten by
 * `forget --visitor`. Whatever names a listed visitor (a feedback item, a survey answer, a
 * webhook delivery) is dropped before anything of it is written, so a forget survives the next
 * sync's lookback, a backfill and a webhook redelivery. Entries hold the id as the source stores
 * it (src/privacy/pii.ts storedVisitorId): the HMAC pseudonym under pii hash and drop.
 *
 * Race with a sync window or a webhook batch that is writing the visitor while `forget` runs: a
 * writer locks the one row of suppression_lock FOR KEY SHARE before it reads the list, `forget`
 * and `unforget` FOR UPDATE (a row lock, not an advisory one: only a role that may update the
 * table can take it, so an analyst cannot hold writers up; migration 0013).
 * So `forget` waits for the writers in flight (their rows are there when it deletes), and a writer
 * that starts later reads the list once `forget` has committed. Writers never wait on each other.
 */

/** One entry: the visitor as one source stores them. */
export interface Suppression {
  sourceId: string;
  visitorId: string;
  /** visitorId is the HMAC pseudonym, not the id as sent. */
  hashed: boolean;
}

export interface ListedSuppression extends Suppression {
  forgottenAt: Date;
}

/**
 * Locks the one row of suppression_lock; a warehouse without it would silently lock nothing.
 * Writers take their shared lock through the owner's function (migration 0020): the receiver then
 * needs no UPDATE on the table, which would let it take the row FOR UPDATE or lock the table.
 */
async function lockRow(db: Kysely<Database>, strength: 'key share' | 'update'): Promise<void> {
  const locked =
    strength === 'key share'
      ? (await sql<{ n: number }>`select share_suppression_lock() as n`.execute(db)).rows[0]?.n
      : (await sql<{ id: boolean }>`select id from suppression_lock for update`.execute(db)).rows.length;
  if (locked !== 1)
    throw new Error(
      'the row of suppression_lock is missing: run `insights-sync migrate` as the schema owner',
    );
}

/**
 * Of `visitorIds` (as stored), those on the source's suppression list. Takes the writers' shared
 * lock first (see above): call it in the transaction that then writes the others, before writing.
 */
export async function suppressedVisitors(
  trx: Pick<LoadTransaction, 'db'>,
  sourceId: string,
  visitorIds: Iterable<string>,
): Promise<Set<string>> {
  // PostgreSQL cannot take U+0000 in a parameter (nor store it: no entry can hold one).
  const ids = [...new Set(visitorIds)].filter((id) => !id.includes('\u0000'));
  if (ids.length === 0) return new Set();
  // A statement of its own: the next one's snapshot then sees a forget that committed meanwhile.
  await lockRow(trx.db, 'key share');
  const rows = await trx.db
    .selectFrom('suppressed_visitors')
    .select('visitor_id')
    .where('source_id', '=', sourceId)
    // One array parameter, not one per id: a window passes the visitors of all its items.
    .where(sql<boolean>`visitor_id = any(${ids}::text[])`)
    .execute();
  return new Set(rows.map((row) => row.visitor_id));
}

/**
 * The writers' shared lock alone, for a writer that reads the list in its next statement itself
 * (the webhook receiver's, src/load/webhook-events.ts): a round trip fewer than suppressedVisitors.
 */
export async function shareSuppressionLock(trx: Pick<LoadTransaction, 'db'>): Promise<void> {
  await lockRow(trx.db, 'key share');
}

/** For forget and unforget: waits for the writers in flight, and holds later ones until commit. */
export async function lockSuppressionList(trx: Kysely<Database>): Promise<void> {
  await lockRow(trx, 'update');
}

/** Adds entries (an entry already there keeps its forgotten_at). Call after lockSuppressionList. */
export async function addSuppressions(trx: Kysely<Database>, entries: readonly Suppression[]): Promise<void> {
  if (entries.length === 0) return;
  await trx
    .insertInto('suppressed_visitors')
    .values(
      entries.map((entry) => ({
        source_id: entry.sourceId,
        visitor_id: entry.visitorId,
        hashed: entry.hashed,
      })),
    )
    .onConflict((oc) => oc.columns(['source_id', 'visitor_id']).doNothing())
    .execute();
}

/**
 * Removes the entries of any of `visitorIds` (the id as sent and its pseudonym, say), of one
 * source or of all. Returns the entries removed. Rows deleted by the forget do not come back
 * until a sync reads their days again (or a delivery is sent again).
 */
export async function removeSuppressions(
  db: Kysely<Database>,
  request: { visitorIds: readonly string[]; source?: string },
): Promise<Suppression[]> {
  if (request.visitorIds.length === 0) return [];
  const source = request.source;
  return inDbTransaction(db, async (trx) => {
    await lockSuppressionList(trx);
    const rows = await trx
      .deleteFrom('suppressed_visitors')
      .where('visitor_id', 'in', request.visitorIds)
      .$call((qb) => (source === undefined ? qb : qb.where('source_id', '=', source)))
      .returning(['source_id', 'visitor_id', 'hashed'])
      .execute();
    return rows.map((row) => ({ sourceId: row.source_id, visitorId: row.visitor_id, hashed: row.hashed }));
  });
}

/** The whole list (or one source's), oldest entry first. */
export async function listSuppressions(db: Kysely<Database>, source?: string): Promise<ListedSuppression[]> {
  const rows = await db
    .selectFrom('suppressed_visitors')
    .select(['source_id', 'visitor_id', 'hashed', 'forgotten_at'])
    .$call((qb) => (source === undefined ? qb : qb.where('source_id', '=', source)))
    .orderBy('forgotten_at')
    .orderBy('source_id')
    .orderBy('visitor_id')
    .execute();
  return rows.map((row) => ({
    sourceId: row.source_id,
    visitorId: row.visitor_id,
    hashed: row.hashed,
    forgottenAt: row.forgotten_at,
  }));
}
