/**
 * The tool's own tables (runs, the ledger, watermarks, rejects, stored webhook deliveries, what it
 * learned about the server, the suppression list, its locks and the migrator's tables) live in a
 * schema of their own beside the data schema: Metabase, dbt and `\dt` list the data
 * schema, and analysts see data only. `sync_health`, the analyst's view of the bookkeeping, stays
 * in the data schema. Every connection's search_path holds both, data first, so the code names
 * tables unqualified and a new table is created in the data schema unless it says otherwise.
 */

/** What the bookkeeping schema's name adds to the data schema's. */
const SUFFIX = '_state';

/** The bookkeeping schema of a warehouse whose data schema is `schema`. */
export function bookkeepingSchema(schema: string): string {
  return `${schema}${SUFFIX}`;
}

/**
 * pg-boss keeps its tables in a schema of its own, named after the warehouse's: several
 * warehouses in one database keep their queues apart (docs/scaling.md).
 */
export function queueSchema(schema: string): string {
  return `${schema}_queue`;
}

/** PostgreSQL names are at most 63 bytes: a data schema leaves room for the suffix (`_queue` is as long). */
export const MAX_SCHEMA_LENGTH = 63 - SUFFIX.length;

/** A data schema's name: lower-case letters, digits and underscores, room left for the suffix. */
export const SCHEMA_NAME = new RegExp(`^[a-z_][a-z0-9_]{0,${MAX_SCHEMA_LENGTH - 1}}$`);

/** The search_path of a warehouse connection. */
export function searchPath(schema: string): string {
  return `${schema},${bookkeepingSchema(schema)}`;
}

/** The migrator's tables (Kysely's), kept in the bookkeeping schema from migration 0014 on. */
export const MIGRATION_TABLES = ['kysely_migration', 'kysely_migration_lock'] as const;
