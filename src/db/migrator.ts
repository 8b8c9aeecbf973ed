import { type Kysely, sql } from 'kysely';
import { type MigrationResultSet, Migrator } from 'kysely/migration';
import { migrations } from '../../migrations/index.js';
import { bookkeepingSchema, MIGRATION_TABLES, queueSchema } from './bookkeeping.js';
import type { Database } from './database.js';

export interface MigrationOutcome {
  applied: string[];
  error?: unknown;
}

/**
 * Brings the warehouse to the latest migration. The db's connections must have the warehouse's
 * search_path (createPool sets it): tables are created unqualified, in the data schema. The
 * migrator's own tables are in the bookkeeping schema (src/db/bookkeeping.ts); a warehouse made
 * before migration 0014 has them in the data schema, and they move first.
 */
export async function migrateToLatest(db: Kysely<Database>, schema: string): Promise<MigrationOutcome> {
  const bookkeeping = bookkeepingSchema(schema);
  try {
    await ensureSchema(db, schema);
    await ensureSchema(db, bookkeeping);
    await moveMigrationTables(db, schema, bookkeeping);
  } catch (error) {
    return { applied: [], error };
  }
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => migrations },
    migrationTableSchema: bookkeeping,
  });
  const result: MigrationResultSet = await migrator.migrateToLatest();
  const applied = (result.results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
  if (result.error !== undefined) return { applied, error: result.error };
  try {
    // The window queue's tables are pg-boss's to version, installed by the owner (queue-schema.ts).
    await ensureSchema(db, queueSchema(schema));
    const { installQueueSchema } = await import('./queue-schema.js');
    await installQueueSchema(db, schema);
    await keepMigrationStateOwners(db, schema);
  } catch (error) {
    return { applied, error };
  }
  return { applied };
}

/**
 * Only the owner writes migration state: Kysely's tables and pg-boss's `version`. The default
 * privileges of docs/roles.sql give the sync role writes on every table of the schemas, these
 * included, and a runtime role that edits them breaks the owner's next migrate (a deleted row is
 * run again; a lowered pg-boss version replays its DDL) or makes it skip an upgrade. Taken back at
 * every migrate, for the tables migrate itself creates. pg-boss's maintenance, which runs in the
 * runtime processes, stamps when it last ran in columns of `version`: those stay writable.
 */
async function keepMigrationStateOwners(db: Kysely<Database>, schema: string): Promise<void> {
  const bookkeeping = bookkeepingSchema(schema);
  for (const table of MIGRATION_TABLES) await revokeWrites(db, bookkeeping, table, []);
  await revokeWrites(db, queueSchema(schema), 'version', PGBOSS_STAMPS);
}

/**
 * Columns of pg-boss's `version` that its runtime passes stamp (cron, the bam and flow pollers,
 * the index maintenance, the monitor's backoff: pg-boss 12's plans.js), so the runtime roles keep
 * UPDATE on them alone.
 */
const PGBOSS_STAMPS = ['cron_on', 'bam_on', 'flow_on', 'reindex_on', 'monitor_backoff_on'];

/**
 * Revokes INSERT, UPDATE, DELETE and TRUNCATE on a table from every role but its owner; the roles
 * that could update it keep UPDATE on `keep` (the columns of them the table has). A table that is
 * not there, or not the connected role's, is left alone.
 */
async function revokeWrites(
  db: Kysely<Database>,
  schemaName: string,
  table: string,
  keep: readonly string[],
): Promise<void> {
  const found = await sql<{ role: string; updates: boolean; columns: string[] | null }>`
    with t as (
      select c.oid, c.relowner from pg_class c join pg_namespace n on n.oid = c.relnamespace
       where n.nspname = ${schemaName} and c.relname = ${table} and c.relkind in ('r', 'p')
         -- A role that does not own it (a runtime role finding nothing to migrate) leaves it as is.
         and pg_has_role(current_user, c.relowner, 'USAGE'))
    select case when g.grantee = 0 then 'public' else g.grantee::regrole::text end as role,
           bool_or(g.privilege_type = 'UPDATE') as updates,
           (select array_agg(attname::text order by attnum) from pg_attribute
             where attrelid = (select oid from t) and attname::text = any(${sql.val(keep)}::text[])
               and not attisdropped) as columns
      from (select a.grantee, a.privilege_type
              from t join pg_class c on c.oid = t.oid cross join lateral aclexplode(c.relacl) a
            union all
            select a.grantee, a.privilege_type
              from t join pg_attribute att on att.attrelid = t.oid and att.attacl is not null
              cross join lateral aclexplode(att.attacl) a) g
     where g.grantee <> (select relowner from t)
       and g.privilege_type in ('INSERT', 'UPDATE', 'DELETE', 'TRUNCATE')
     group by g.grantee`.execute(db);
  for (const { role, updates, columns } of found.rows) {
    await sql`revoke insert, update, delete, truncate on ${sql.id(schemaName, table)} from ${sql.raw(role)}`.execute(
      db,
    );
    if (updates && columns !== null && columns.length > 0)
      await sql`grant update (${sql.join(columns.map((c) => sql.id(c)))}) on ${sql.id(schemaName, table)} to ${sql.raw(role)}`.execute(
        db,
      );
  }
}

/**
 * CREATE SCHEMA IF NOT EXISTS checks the right to create schemas even when the schema is there:
 * a least-privilege role that owns schemas created for it (docs/roles.sql) must not need it.
 */
async function ensureSchema(db: Kysely<Database>, name: string): Promise<void> {
  const existing = await sql<{ found: boolean }>`
    select exists (select 1 from pg_namespace where nspname = ${name}) as found`.execute(db);
  if (existing.rows[0]?.found === true) return;
  try {
    await sql`create schema if not exists ${sql.id(name)}`.execute(db);
  } catch (error) {
    if ((error as { code?: unknown }).code !== INSUFFICIENT_PRIVILEGE) throw error;
    throw new Error(
      `this database user may not create schema ${name}: create it as a superuser (create schema ${name} authorization <the role that runs migrate>, as in docs/roles.sql), then run migrate again`,
      { cause: error },
    );
  }
}

/**
 * Kysely reads its tables before it runs any migration, so the move of its tables to the
 * bookkeeping schema cannot be a migration. Two migrates at once: the second waits on the first's
 * lock and then finds the table gone (undefined_table), which means done.
 */
async function moveMigrationTables(db: Kysely<Database>, schema: string, bookkeeping: string): Promise<void> {
  const found = await sql<{ old: boolean; moved: boolean }>`
    select to_regclass(${`${quoteIdent(schema)}.kysely_migration`}) is not null as old,
           to_regclass(${`${quoteIdent(bookkeeping)}.kysely_migration`}) is not null as moved`.execute(db);
  if (found.rows[0]?.old !== true || found.rows[0]?.moved === true) return;
  try {
    await db.transaction().execute(async (trx) => {
      for (const table of MIGRATION_TABLES)
        await sql`alter table ${sql.id(schema, table)} set schema ${sql.id(bookkeeping)}`.execute(trx);
    });
  } catch (error) {
    if ((error as { code?: unknown }).code !== UNDEFINED_TABLE) throw error;
  }
}

const INSUFFICIENT_PRIVILEGE = '42501';
const UNDEFINED_TABLE = '42P01';

/** The newest migration this version knows: what a queue job it plans names (window-queue.ts). */
export const LATEST_MIGRATION: string = Object.keys(migrations).sort().at(-1) ?? '';

/** Where a warehouse stands against this version's migrations, read without writing anything. */
export interface MigrationState {
  schemaExists: boolean;
  /** The last migration applied; undefined when none is (a new or foreign schema). */
  current: string | undefined;
  /** The last migration this version knows. */
  latest: string;
  /** Migrations this version has and the warehouse has not applied, in order. */
  pending: string[];
  /**
   * Migrations the warehouse has and this version does not know, in order: a newer version
   * migrated it. This version must not run against it (its tables may mean something else now).
   */
  unknown: string[];
  /** Whether the connected role may apply them: it owns the schema, or may create it. */
  canMigrate: boolean;
  /** The connected role, to name it in a message. */
  role: string;
}

/**
 * Reads the migration table itself instead of asking Kysely's Migrator, which creates its tables
 * (CREATE TABLE IF NOT EXISTS) even when nothing is pending: a read-only command, or a role that
 * does not own the schema, must not write, and must not fail on a right it does not need.
 */
export async function migrationState(db: Kysely<Database>, schema: string): Promise<MigrationState> {
  const known = Object.keys(migrations).sort();
  const bookkeeping = bookkeepingSchema(schema);
  const found = await sql<{
    schema_exists: boolean;
    table_exists: boolean;
    moved: boolean;
    can_migrate: boolean;
    role: string;
  }>`
    select n.oid is not null as schema_exists,
           to_regclass(${`${quoteIdent(schema)}.kysely_migration`}) is not null as table_exists,
           to_regclass(${`${quoteIdent(bookkeeping)}.kysely_migration`}) is not null as moved,
           case when n.oid is null then has_database_privilege(current_database(), 'CREATE')
                else pg_has_role(current_user, n.nspowner, 'USAGE') end as can_migrate,
           current_user::text as role
      from (select 1) as one
      left join pg_namespace n on n.nspname = ${schema}`.execute(db);
  const row = found.rows[0];
  // Before migration 0014 the migrator's table was in the data schema.
  const table = row?.moved === true ? bookkeeping : row?.table_exists === true ? schema : undefined;
  const applied =
    table === undefined
      ? []
      : (
          await sql<{
            name: string;
          }>`select name from ${sql.id(table, 'kysely_migration')} order by name`.execute(db)
        ).rows.map((r) => r.name);
  const done = new Set(applied);
  const knownSet = new Set(known);
  return {
    schemaExists: row?.schema_exists === true,
    current: applied.at(-1),
    latest: known.at(-1) ?? '',
    pending: known.filter((name) => !done.has(name)),
    unknown: applied.filter((name) => !knownSet.has(name)),
    canMigrate: row?.can_migrate === true,
    role: row?.role ?? '',
  };
}

function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** One line for a read-only command on a warehouse behind this version. */
export function notMigrated(state: MigrationState, schema: string, where: string): string {
  return state.current === undefined
    ? `the warehouse is not migrated (no insights-sync schema ${schema} at ${where}): run insights-sync migrate`
    : `the warehouse is at migration ${state.current} and this version needs ${state.latest} (schema ${schema} at ${where}): run insights-sync migrate`;
}

/** One line for any command on a warehouse a newer version of insights-sync migrated. */
export function newerWarehouse(state: MigrationState, schema: string, where: string): string {
  const newest = state.unknown.at(-1) ?? '';
  return `schema ${schema} at ${where} has migration ${newest}, which this insights-sync does not know (the newest it knows is ${state.latest}): a newer version migrated it; upgrade insights-sync to that version (or newer) before running it against this warehouse`;
}
