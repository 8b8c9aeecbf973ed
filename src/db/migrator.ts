import { type Kysely, type MigrationResultSet, Migrator, sql } from 'kysely';
import { migrations } from '../../migrations/index.js';
import type { Database } from './database.js';

export interface MigrationOutcome {
  applied: string[];
  error?: unknown;
}

/**
 * Brings the schema to the latest migration. The db's connections must have search_path set to
 * `schema` (createPool does): tables are created unqualified.
 */
export async function migrateToLatest(db: Kysely<Database>, schema: string): Promise<MigrationOutcome> {
  // CREATE SCHEMA IF NOT EXISTS checks the right to create schemas even when the schema is there:
  // a least-privilege role that owns a schema created for it (docs/roles.sql) must not need it.
  const existing = await sql<{ found: boolean }>`
    select exists (select 1 from pg_namespace where nspname = ${schema}) as found`.execute(db);
  if (existing.rows[0]?.found !== true) await sql`create schema if not exists ${sql.id(schema)}`.execute(db);
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => migrations },
    migrationTableSchema: schema,
  });
  const result: MigrationResultSet = await migrator.migrateToLatest();
  const applied = (result.results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
  return result.error === undefined ? { applied } : { applied, error: result.error };
}

/** Where a warehouse stands against this version's migrations, read without writing anything. */
export interface MigrationState {
  schemaExists: boolean;
  /** The last migration applied; undefined when none is (a new or foreign schema). */
  current: string | undefined;
  /** The last migration this version knows. */
  latest: string;
  /** Migrations this version has and the warehouse has not applied, in order. */
  pending: string[];
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
  const found = await sql<{
    schema_exists: boolean;
    table_exists: boolean;
    can_migrate: boolean;
    role: string;
  }>`
    select n.oid is not null as schema_exists,
           to_regclass(${`${quoteIdent(schema)}.kysely_migration`}) is not null as table_exists,
           case when n.oid is null then has_database_privilege(current_database(), 'CREATE')
                else pg_has_role(current_user, n.nspowner, 'USAGE') end as can_migrate,
           current_user::text as role
      from (select 1) as one
      left join pg_namespace n on n.nspname = ${schema}`.execute(db);
  const row = found.rows[0];
  const applied =
    row?.table_exists === true
      ? (
          await sql<{
            name: string;
          }>`select name from ${sql.id(schema, 'kysely_migration')} order by name`.execute(db)
        ).rows.map((r) => r.name)
      : [];
  const done = new Set(applied);
  return {
    schemaExists: row?.schema_exists === true,
    current: applied.at(-1),
    latest: known.at(-1) ?? '',
    pending: known.filter((name) => !done.has(name)),
    canMigrate: row?.can_migrate === true,
    role: row?.role ?? '',
  };
}

function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
