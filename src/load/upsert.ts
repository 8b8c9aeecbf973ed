import { sql } from 'kysely';
import type { CopyValue } from '../db/copy-text.js';
import type { Database } from '../db/database.js';
import type { LoadTransaction } from '../db/transaction.js';
import type { WindowedResource } from '../schemas/resource-names.js';

export type WarehouseTable = keyof Database & string;
export type ColumnOf<T extends WarehouseTable> = keyof Database[T] & string;

export interface UpsertSpec<T extends WarehouseTable> {
  table: T;
  /** The primary key. */
  key: readonly ColumnOf<T>[];
  /** Every column a row carries, key included, in the order of the row arrays. */
  columns: readonly ColumnOf<T>[];
  /** A row whose compared columns all equal the stored row's is left untouched. */
  compare: readonly ColumnOf<T>[];
  /**
   * The table has an `origin` column (migration 0002). Rows are inserted as 'api'; a row only a
   * webhook had seen is always overwritten (the API is authoritative) and becomes 'both'.
   */
  origin?: boolean;
  /**
   * A dated table whose keys may repeat across days (spec 2.3-2.5 promise no unique ids): a
   * staged row whose key a row of another UTC day holds is a collision. The later dt keeps the
   * key; the other version goes to key_collisions verbatim (see setAsideCollisions). A stored row
   * its own day no longer serves gives the key up either way (a moved item, src/load/moved-items.ts).
   */
  collisions?: { resource: WindowedResource };
}

/** Any table's spec, once its column names have been checked where it was declared. */
export interface CheckedUpsertSpec {
  table: WarehouseTable;
  key: readonly string[];
  columns: readonly string[];
  compare: readonly string[];
  origin?: boolean;
  collisions?: { resource: WindowedResource };
}

export interface UpsertCounts {
  inserted: number;
  updated: number;
  unchanged: number;
  /** Versions newly set aside in key_collisions (a key another day's item holds). */
  collisions?: number;
  /** Of the staged rows, those not written because another day's item holds their key (in collisions too). */
  withheld?: number;
  /** Versions newly set aside because their item moved to another day (reason 'moved'). */
  moves?: number;
}

export interface UpsertOptions {
  /**
   * 'update' (default): new rows are inserted and changed rows updated. 'insert-missing': rows
   * whose key is stored already are left alone, for items a window saw of another day, which
   * that day's own window keeps current.
   */
  mode?: 'update' | 'insert-missing';
  runId?: number | null;
}

/** Staging tables each transaction has filled already. */
const stagedIn = new WeakMap<LoadTransaction, Set<string>>();

/**
 * Set-based upsert: COPY the rows into a session-local staging table, then one INSERT ... SELECT
 * ... ON CONFLICT. Rows identical to what is stored are filtered out *before* the upsert (an
 * ON CONFLICT ... WHERE guard would still lock and WAL-log every conflicting row), so a re-load
 * of unchanged data writes nothing. Rows must already be unique on the key.
 */
export async function upsertRows(
  trx: LoadTransaction,
  spec: CheckedUpsertSpec,
  rows: readonly (readonly CopyValue[])[],
  options: UpsertOptions = {},
): Promise<UpsertCounts> {
  if (rows.length === 0) return { inserted: 0, updated: 0, unchanged: 0 };
  return upsertStaged(trx, await stageRows(trx, spec, rows), options);
}

/** Rows of one table COPYed into its staging table, where any statement can join them. */
export interface StagedRows {
  spec: CheckedUpsertSpec;
  /** The staging table's name (a temporary table of the transaction's connection). */
  stage: string;
  count: number;
}

/**
 * COPYs rows into the table's staging table (emptied first if this transaction filled it
 * already). A lookup keyed by the rows joins it: the statement's text then stays the same
 * whatever the row count, where a literal list of keys would exceed PostgreSQL's stack depth or
 * its 65,535 bind parameters on a busy day.
 */
export async function stageRows(
  trx: LoadTransaction,
  spec: CheckedUpsertSpec,
  rows: readonly (readonly CopyValue[])[],
): Promise<StagedRows> {
  const stage = `stage_${spec.table}`;
  // Lives as long as the connection, created once per connection; emptied at every commit or
  // rollback. Two round trips per table and window saved: the window's transaction is short.
  if (!trx.connection.has(`temp table ${stage}`)) {
    // Keyed like the table: a statement that joins the staged rows from the stored table's side
    // finds each by its key, where a table without index is read whole for every stored row.
    const key = sql.join(spec.key.map((c) => sql.id(c)));
    await sql`create temp table if not exists ${sql.id(stage)} (like ${sql.table(spec.table)} including defaults, primary key (${key})) on commit delete rows`.execute(
      trx.db,
    );
    trx.connection.add(`temp table ${stage}`);
  }
  // Empty at the start of a transaction; cleared only when this transaction loads it again.
  const used = stagedIn.get(trx) ?? new Set<string>();
  stagedIn.set(trx, used);
  if (used.has(stage)) await sql`delete from ${sql.id(stage)}`.execute(trx.db);
  used.add(stage);
  if (rows.length > 0) await trx.copyRows(stage, spec.columns, rows);
  return { spec, stage, count: rows.length };
}

/** The upsert's counts, and what its statement read of the rows before it wrote them. */
export interface StagedUpsert extends UpsertCounts {
  /**
   * Visitors that rows only a webhook had delivered (origin 'webhook') named, where the API's
   * copy of the same row names another: candidates for removal once no row names them (the
   * window's merge does this for the windowed tables, migration 0041). Sorted; empty for a table
   * without origin or visitor.
   */
  contradicted: string[];
}

/** The upsert of upsertRows, from rows stageRows has staged (and nothing has staged since). */
export async function upsertStaged(
  trx: LoadTransaction,
  staged: StagedRows,
  options: UpsertOptions = {},
): Promise<UpsertCounts> {
  const { contradicted: _read, ...counts } = await upsertStagedReading(trx, staged, options);
  return counts;
}

/** upsertStaged, with what its statement read before it wrote (StagedUpsert). */
export async function upsertStagedReading(
  trx: LoadTransaction,
  staged: StagedRows,
  options: UpsertOptions = {},
): Promise<StagedUpsert> {
  const { spec, stage } = staged;
  if (staged.count === 0) return { inserted: 0, updated: 0, unchanged: 0, contradicted: [] };
  const mode = options.mode ?? 'update';
  const cols = sql.join(spec.columns.map((c) => sql.id(c)));
  const stagedCols = sql.join(spec.columns.map((c) => sql.ref(`s.${c}`)));
  const keyMatch = sql.join(
    spec.key.map((c) => sql`t.${sql.id(c)} = s.${sql.id(c)}`),
    sql` and `,
  );
  // A provisional row (only a webhook has seen it) is never "unchanged": the API completes it.
  const storedOrigin = sql.ref(`${spec.table}.origin`);
  const same = sql.join(
    spec.compare
      .map((c) => sql`t.${sql.id(c)} is not distinct from s.${sql.id(c)}`)
      .concat(spec.origin ? [sql`t.origin <> 'webhook'`] : []),
    sql` and `,
  );
  const sameAsExcluded = sql.join(
    spec.compare
      .map((c) => sql`${sql.table(spec.table)}.${sql.id(c)} is not distinct from excluded.${sql.id(c)}`)
      .concat(spec.origin ? [sql`${storedOrigin} <> 'webhook'`] : []),
    sql` and `,
  );
  const updates = sql.join(
    spec.columns
      .filter((c) => !spec.key.includes(c))
      .map((c) => sql`${sql.id(c)} = excluded.${sql.id(c)}`)
      .concat([sql`last_changed_at = now()`])
      .concat(
        spec.origin
          ? [sql`origin = case when ${storedOrigin} = 'webhook' then 'both' else ${storedOrigin} end`]
          : [],
      ),
  );
  const result = await sql<{ inserted: number; updated: number; contradicted: string[] | null }>`
    with contradicted as (${contradictedVisitors(staged)}), written as (
      insert into ${sql.table(spec.table)} (${cols})
      select ${stagedCols} from ${sql.id(stage)} s
      where not exists (select 1 from ${sql.table(spec.table)} t where ${keyMatch} and ${same})
      -- Key order: concurrent windows sharing rows (visitors) lock them in one order, never deadlock.
      order by ${sql.join(spec.key.map((c) => sql.ref(`s.${c}`)))}
      on conflict (${sql.join(spec.key.map((c) => sql.id(c)))}) ${
        mode === 'insert-missing'
          ? sql`do nothing`
          : // A row another window committed meanwhile with the same content is not rewritten.
            sql`do update set ${updates} where not (${sameAsExcluded})${
              spec.collisions ? sql` and ${laterKeepsKey(spec.table)}` : sql``
            }`
      }
      returning (xmax = 0) as is_insert
    )
    select count(*) filter (where is_insert)::int as inserted,
           count(*) filter (where not is_insert)::int as updated,
           (select array_agg(c.visitor_id order by c.visitor_id) from contradicted c) as contradicted
    from written`.execute(trx.db);
  const { contradicted, ...counts } = result.rows[0] ?? { inserted: 0, updated: 0, contradicted: null };
  const { collisions, moves, withheld } =
    spec.collisions && mode === 'update'
      ? await setAsideCollisions(trx, spec, spec.collisions.resource, stage, options.runId ?? null)
      : { collisions: 0, moves: 0, withheld: 0 };
  return {
    ...counts,
    unchanged: staged.count - counts.inserted - counts.updated - withheld,
    ...(spec.collisions ? { collisions, withheld, moves } : {}),
    contradicted: contradicted ?? [],
  };
}

/**
 * The visitors of StagedUpsert.contradicted, as a query of the upsert's statement: every part of
 * a statement reads the rows as they were before it, so it sees the webhook's rows the upsert
 * then overwrites. A join with the staged rows: the statement is the same for 1 item or 10,000.
 */
function contradictedVisitors(staged: StagedRows) {
  const { spec, stage } = staged;
  if (!spec.origin || !spec.columns.includes('visitor_id'))
    return sql`select null::text as visitor_id where false`;
  const keyMatch = sql.join(
    spec.key.map((c) => sql`t.${sql.id(c)} = s.${sql.id(c)}`),
    sql` and `,
  );
  return sql`
    select distinct t.visitor_id from ${sql.table(spec.table)} t join ${sql.id(stage)} s on ${keyMatch}
    where t.origin = 'webhook' and t.visitor_id is not null
      and s.visitor_id is distinct from t.visitor_id`;
}

/**
 * Cross-day key collisions, decided the same way whatever order windows commit in: of two items
 * with one key and dt on different UTC days, the later dt keeps the key (the ON CONFLICT clause
 * of the upsert refuses an older one). A version the upsert replaced was set aside by the
 * trigger of migration 0006; here the staged versions that lost are, and this transaction's
 * set-aside versions are counted and tagged with the run. Once each: a re-run adds nothing.
 * Rows only a webhook has seen (dt null) never collide: the API completes them.
 */
async function setAsideCollisions(
  trx: LoadTransaction,
  spec: CheckedUpsertSpec,
  resource: string,
  stage: string,
  runId: number | null,
): Promise<{ collisions: number; moves: number; withheld: number }> {
  const keyMatch = sql.join(
    spec.key.map((c) => sql`t.${sql.id(c)} = s.${sql.id(c)}`),
    sql` and `,
  );
  const itemKey = sql`concat_ws('/', ${sql.join(spec.key.filter((c) => c !== 'source_id').map((c) => sql.ref(`s.${c}`)))})`;
  const result = await sql<{ withheld: number; replaced: number; moved: number }>`
    with losers as (
      insert into key_collisions (source_id, resource, item_key, dt, raw, run_id)
      select s.source_id, ${resource}, ${itemKey}, s.dt, s.raw, ${runId}
      from ${sql.id(stage)} s join ${sql.table(spec.table)} t on ${keyMatch}
      where ${OTHER_DAY} and t.dt > s.dt
      on conflict do nothing
      returning 1
    ), replaced as (
      update key_collisions set run_id = ${runId}
      where resource = ${resource} and run_id is null
        and xmin::text = (txid_current() % 4294967296)::text
      returning reason
    )
    select (select count(*)::int from losers) as withheld,
           (select count(*)::int from replaced where reason = 'collision') as replaced,
           (select count(*)::int from replaced where reason = 'moved') as moved`.execute(trx.db);
  const row = result.rows[0] ?? { withheld: 0, replaced: 0, moved: 0 };
  return { collisions: row.withheld + row.replaced, moves: row.moved, withheld: row.withheld };
}

/** Stored row t and staged row s carry dt on different UTC days. */
const OTHER_DAY = sql`t.dt is not null and s.dt is not null
    and (t.dt at time zone 'UTC')::date <> (s.dt at time zone 'UTC')::date`;

/**
 * In ON CONFLICT: the incoming version may replace the stored one unless it is of an earlier other
 * day and the stored one is still served by its own day.
 */
function laterKeepsKey(table: string) {
  const stored = sql.ref(`${table}.dt`);
  // A stored version its own day no longer serves (absent_since, src/load/moved-items.ts) is a
  // moved item's old version: the served one takes the key, whichever day is later.
  return sql`(${stored} is null or excluded.dt is null
    or (${stored} at time zone 'UTC')::date = (excluded.dt at time zone 'UTC')::date
    or excluded.dt > ${stored}
    or ${sql.ref(`${table}.absent_since`)} is not null)`;
}
