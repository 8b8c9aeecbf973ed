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
