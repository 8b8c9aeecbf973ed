import { sql } from 'kysely';
import type { Database } from '../db/database.js';
import type { CopyValue } from './copy-text.js';
import type { LoadTransaction } from './transaction.js';

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
}

/** Any table's spec, once its column names have been checked where it was declared. */
export interface CheckedUpsertSpec {
  table: WarehouseTable;
  key: readonly string[];
  columns: readonly string[];
  compare: readonly string[];
  origin?: boolean;
}

export interface UpsertCounts {
  inserted: number;
  updated: number;
  unchanged: number;
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
): Promise<UpsertCounts> {
  if (rows.length === 0) return { inserted: 0, updated: 0, unchanged: 0 };
  const stage = `stage_${spec.table}`;
  // Lives as long as the connection, created once per connection; emptied at every commit or
  // rollback. Two round trips per table and window saved: the window's transaction is short.
  if (!trx.connection.has(`temp table ${stage}`)) {
    await sql`create temp table if not exists ${sql.id(stage)} (like ${sql.table(spec.table)} including defaults) on commit delete rows`.execute(
      trx.db,
    );
    trx.connection.add(`temp table ${stage}`);
  }
  // Empty at the start of a transaction; cleared only when this transaction loads it again.
  const used = stagedIn.get(trx) ?? new Set<string>();
  stagedIn.set(trx, used);
  if (used.has(stage)) await sql`delete from ${sql.id(stage)}`.execute(trx.db);
  used.add(stage);
  await trx.copyRows(stage, spec.columns, rows);

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
  const result = await sql<{ inserted: number; updated: number }>`
    with written as (
      insert into ${sql.table(spec.table)} (${cols})
      select ${stagedCols} from ${sql.id(stage)} s
      where not exists (select 1 from ${sql.table(spec.table)} t where ${keyMatch} and ${same})
      -- Key order: concurrent windows sharing rows (visitors) lock them in one order, never deadlock.
      order by ${sql.join(spec.key.map((c) => sql.ref(`s.${c}`)))}
      on conflict (${sql.join(spec.key.map((c) => sql.id(c)))}) do update set ${updates}
      -- A row another window committed meanwhile with the same content is not rewritten.
      where not (${sameAsExcluded})
      returning (xmax = 0) as is_insert
    )
    select count(*) filter (where is_insert)::int as inserted,
           count(*) filter (where not is_insert)::int as updated
    from written`.execute(trx.db);
  const counts = result.rows[0] ?? { inserted: 0, updated: 0 };
  return { ...counts, unchanged: rows.length - counts.inserted - counts.updated };
}
