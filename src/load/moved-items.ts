/**
 * Moved items: the version the API serves now wins.
 *
 * The spec lets a key repeat on other days, so a key coming back on another day may be a second
 * live item (a collision: the later dt keeps the key, src/load/upsert.ts) or the same item whose
 * date the service corrected (a move). Only the day the stored version is on can tell them apart:
 * a whole read of that day (not truncated, every item valid, not empty) that lacks the key is
 * evidence its version is no longer served there. Such a row gets absent_since, and from then on
 * the version another day serves takes its key, whether that day is earlier or later:
 *  - if the other day's window loads after the absence was recorded, its upsert replaces the row
 *    (the ON CONFLICT rule lets a version of any day replace an absent one);
 *  - if it loaded before (same run or earlier), its version was set aside as a collision, and the
 *    whole read of the old day promotes it from key_collisions here.
 * Either way the version left behind is kept in key_collisions with reason 'moved' (the trigger of
 * migration 0026) and counted as a move, not a collision.
 *
 * "Read most recently" thus means: by evidence of each day's own latest whole read, not by which
 * window happened to commit last. Two windows of one run may load concurrently: the old day's
 * absence mark and the new day's upsert both lock the one stored row, so one commits first and
 * the other sees its result; in both orders the served version ends up holding the key. A version
 * left behind by a move is never promoted back: if the item moves back, its day serves it again.
 * An empty answer is no evidence (it may be a transient `200 []`), nor is a truncated or partly
 * invalid one (the missing key may be among the items cut off or unreadable).
 *
 * Deletes on evidence: a row absent from its day's whole read in two runs in a row, whose key no
 * other day serves (it would have taken the row over), is marked missing_upstream_since. It is
 * never deleted, and a read of its day that holds it again clears both marks. That read need not
 * be whole: serving an item proves it exists (clearServed), only proving it gone needs every item.
 */
import { sql } from 'kysely';
import type { LoadTransaction } from '../db/transaction.js';
import { addDays, type DayString } from '../time/days.js';
import type { StagedRows } from './upsert.js';

/** Whether a day's answer can prove an item is not on that day. */
export function isWholeDayEvidence(read: { truncated: boolean; rejected: number; valid: number }): boolean {
  return !read.truncated && read.rejected === 0 && read.valid > 0;
}

/** The table's natural key without the source, joined with / as key_collisions.item_key holds it. */
function itemKeyOf(staged: StagedRows, alias: string) {
  return sql`concat_ws('/', ${sql.join(
    staged.spec.key.filter((c) => c !== 'source_id').map((c) => sql.ref(`${alias}.${c}`)),
  )})`;
}

/** Row `alias` has dt on the UTC day (a range, so an index on dt can serve it). */
function onDay(alias: string, day: DayString) {
  const dt = sql.ref(`${alias}.dt`);
  return sql`${dt} >= (${day}::timestamp at time zone 'UTC') and ${dt} < (${addDays(day, 1)}::timestamp at time zone 'UTC')`;
}

/**
 * The keys of the day's stored rows that the staged answer lacks. EXCEPT is one hashed pass over
 * each side; an anti-join on the staging table (no index, no statistics) may become a nested loop,
 * 10,000 by 10,000 rows on a busy day.
 */
function lackedKeys(staged: StagedRows, sourceId: string, day: DayString) {
  const columns = (alias: string) => sql.join(staged.spec.key.map((c) => sql.ref(`${alias}.${c}`)));
  return sql`
    select ${columns('d')} from ${sql.table(staged.spec.table)} d
     where d.source_id = ${sourceId} and ${onDay('d', day)}
    except
    select ${columns('x')} from ${sql.id(staged.stage)} x`;
}

function keyMatch(staged: StagedRows) {
  return sql.join(
    staged.spec.key.map((c) => sql`t.${sql.id(c)} = s.${sql.id(c)}`),
    sql` and `,
  );
}

/**
 * Rows the staged answer holds on their own day are served there: their absence ends. Any answer
 * is evidence of this, a truncated one or one holding a rejected item too (loadWindowItems). A
 * valid version served again also ends a rejected newer version's mark (src/load/superseded-rows.ts).
 */
export async function clearServed(trx: LoadTransaction, staged: StagedRows): Promise<void> {
  await clearServedStatement(staged).execute(trx.db);
}

function clearServedStatement(staged: StagedRows) {
  return sql`
    update ${sql.table(staged.spec.table)} t
       set absent_since = null, missing_upstream_since = null, superseded_by_reject_at = null
      from ${sql.id(staged.stage)} s
     where ${keyMatch(staged)}
       and (t.absent_since is not null or t.missing_upstream_since is not null or t.superseded_by_reject_at is not null)
       and (t.dt at time zone 'UTC')::date = (s.dt at time zone 'UTC')::date`;
}

/**
 * Rows of the day its whole answer lacks: absent from now on, or, when an earlier whole read (a
 * run before: a day is read once per run) lacked them too, with every read since, missing
 * upstream from now on (a row marked absent now waits for the next run). One statement for both
 * marks: they touch disjoint rows (absent_since null, or set) and each SET reads the old row.
 * The same statement clears the marks of the rows the answer holds (clearServed): those are keys
 * the answer holds, the marked ones keys it lacks, so the two never touch one row.
 * Returns how many rows it marked missing upstream.
 */
export async function clearServedMarkLacked(
  trx: LoadTransaction,
  staged: StagedRows,
  sourceId: string,
  day: DayString,
): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    with cleared as (${clearServedStatement(staged)}), marked as (
      update ${sql.table(staged.spec.table)} t
         set missing_upstream_since = case when t.absent_since is null then t.missing_upstream_since
                                           else now() end,
             absent_since = coalesce(t.absent_since, now())
        from (${lackedKeys(staged, sourceId, day)}) s
       where ${keyMatch(staged)} and (t.absent_since is null or t.missing_upstream_since is null)
      -- now() is the transaction's start: only this statement marks with it (see missingMarkedNow).
      returning t.missing_upstream_since = now() as missing_now
    )
    select count(*)::int as n from marked where missing_now`.execute(trx.db);
  return rows[0]?.n ?? 0;
}

/**
 * Rows of the day marked missing by this transaction and still there once moves are settled (a
 * row whose key another day serves was taken over, and its marks cleared, instead).
 */
export async function missingMarkedNow(
  trx: LoadTransaction,
  staged: StagedRows,
  sourceId: string,
  day: DayString,
): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    select count(*)::int as n from ${sql.table(staged.spec.table)} t
     where t.source_id = ${sourceId} and ${onDay('t', day)} and t.missing_upstream_since = now()`.execute(
    trx.db,
  );
  return rows[0]?.n ?? 0;
}

/**
 * Two steps of one statement, on disjoint rows of key_collisions (versions of the day, versions
 * of other days), so neither sees the other's change:
 * - versions of the day set aside as collisions that its whole answer (the staged rows) lacks:
 *   the day no longer serves them, so the version holding their key is where the item moved to
 *   (a run that read only the new day could not tell). They become 'moved', counted by this run
 *   (`reclassified`).
 * - for the day's absent rows, the version another day served that was set aside as a collision
 *   (the most recently set aside, if several): the raw items to load in their place (`versions`).
 */
export async function settleLeftVersions(
  trx: LoadTransaction,
  staged: StagedRows,
  resource: string,
  sourceId: string,
  day: DayString,
  runId: number | null,
): Promise<{ reclassified: number; versions: unknown[] }> {
  const { rows } = await sql<{ raw: unknown; n: number | null }>`
    with moved as (
      update key_collisions k set reason = 'moved', run_id = ${runId}
       where k.source_id = ${sourceId} and k.resource = ${resource} and k.reason = 'collision'
         and ${onDay('k', day)}
         -- NOT IN over the staged answer: one hashed pass, whatever the day's size (dt is never null there).
         and (k.item_key, k.dt) not in (select ${itemKeyOf(staged, 's')}, s.dt from ${sql.id(staged.stage)} s)
       returning 1
    )
    select null::jsonb as raw, (select count(*)::int from moved) as n
    union all
    select v.raw, null from (
      select distinct on (k.item_key) k.raw
        from key_collisions k
        join ${sql.table(staged.spec.table)} t on k.item_key = ${itemKeyOf(staged, 't')}
       where t.source_id = ${sourceId} and t.absent_since is not null
         and ${onDay('t', day)}
         and k.source_id = ${sourceId} and k.resource = ${resource} and k.reason = 'collision'
         and (k.dt at time zone 'UTC')::date <> ${day}::date
       order by k.item_key, k.first_seen_at desc, k.dt desc) v`.execute(trx.db);
  return {
    reclassified: rows.find((row) => row.n !== null)?.n ?? 0,
    versions: rows.filter((row) => row.n === null).map((row) => row.raw),
  };
}

/** The promoted versions now hold their keys in the table: they are no longer set aside. */
export async function forgetPromoted(
  trx: LoadTransaction,
  staged: StagedRows,
  resource: string,
): Promise<void> {
  await sql`
    delete from key_collisions k using ${sql.id(staged.stage)} s
     where k.source_id = s.source_id and k.resource = ${resource}
       and k.item_key = ${itemKeyOf(staged, 's')} and k.dt = s.dt`.execute(trx.db);
}
