import { type Kysely, type MigrationLockOptions, PostgresAdapter, PostgresDialect, sql } from 'kysely';
import type pg from 'pg';

/**
 * Kysely's migrator serialises migrates on an advisory lock, which any login of the database may
 * take: an analyst holding its key held every `migrate` (and a writing command finding migrations
 * pending) up to Kysely's hour. Here the lock is the migrator's lock table itself, locked in SHARE
 * UPDATE EXCLUSIVE mode: that needs UPDATE, DELETE or TRUNCATE on the table, which only the owner
 * keeps (migrate takes the others' writes back), and nothing a reader can hold (ACCESS SHARE, a
 * prepared statement's ROW SHARE or ROW EXCLUSIVE) conflicts with it. A table lock lasts as long
 * as a transaction: the migrator asks for the lock on the connection its migrations then run on,
 * in one transaction (its BEGIN after ours only warns), so the lock ends with their commit or
 * rollback, or with the session.
 */
class TableLockAdapter extends PostgresAdapter {
  override async acquireMigrationLock(db: Kysely<unknown>, options: MigrationLockOptions): Promise<void> {
    const table =
      options.lockTableSchema === undefined
        ? sql.table(options.lockTable)
        : sql.id(options.lockTableSchema, options.lockTable);
    const name =
      options.lockTableSchema === undefined
        ? options.lockTable
        : `${options.lockTableSchema}.${options.lockTable}`;
    await sql`begin`.execute(db);
    // A role that may not write the migration state (a runtime role starting a command) cannot
    // record a migration either: it takes no lock, and finds nothing pending or fails on the DDL.
    const { rows } = await sql<{ writes: boolean }>`
      select has_table_privilege(${quoteQualified(name)}, 'UPDATE') as writes`.execute(db);
    if (rows[0]?.writes === true) await sql`lock table ${table} in share update exclusive mode`.execute(db);
  }

  override async releaseMigrationLock(): Promise<void> {
    // Released with the migrations' transaction.
  }
}

/** PostgreSQL as Kysely speaks it, with the migration lock above. */
export class WarehouseDialect extends PostgresDialect {
  constructor(pool: pg.Pool) {
    super({ pool });
  }

  override createAdapter(): PostgresAdapter {
    return new TableLockAdapter();
  }
}

/** `schema.table` as to_regclass reads it, each part quoted. */
function quoteQualified(name: string): string {
  return name
    .split('.')
    .map((part) => `"${part.replaceAll('"', '""')}"`)
    .join('.');
}
