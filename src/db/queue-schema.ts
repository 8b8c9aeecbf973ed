import { type Kysely, sql } from 'kysely';
import { queueSchema } from './bookkeeping.js';
import type { Database } from './database.js';

/**
 * pg-boss's tables (the window queue, docs/scaling.md) are installed and upgraded by `migrate`,
 * as the role that owns the warehouse, in the queue schema that role owns. No runtime role owns
 * anything there: the owner of a table can swap it for a view that runs its own code with the
 * rights of whoever reads it (`status` as a superuser included). The runtime roles get the rows
 * (docs/roles.sql's default privileges), and a source's queue through the owner's
 * create_window_queue (migration 0020). pg-boss 10, schema version 24 when this was written; its
 * own plans are run, so a newer pg-boss brings its own.
 */
export async function installQueueSchema(db: Kysely<Database>, schema: string): Promise<void> {
  const name = queueSchema(schema);
  const { default: PgBoss } = await import('pg-boss');
  const plan = PgBoss.getConstructionPlans(name);
  const current = Number(INSERT_VERSION.exec(plan)?.[1]);
  if (!Number.isInteger(current)) throw new Error("pg-boss's construction plan has no version");
  // A runtime role (no CREATE in it) finding nothing to migrate leaves the queue as it is.
  const mine = await sql<{ create: boolean }>`
    select has_schema_privilege(n.oid, 'CREATE') as create from pg_namespace n where n.nspname = ${name}`.execute(
    db,
  );
  if (mine.rows[0]?.create !== true) return;
  const installed = await queueVersion(db, schema);
  if (installed === undefined) {
    // CREATE SCHEMA IF NOT EXISTS needs CREATE on the database even when the schema is there.
    const withoutSchema = plan.replace(CREATE_SCHEMA, '');
    if (withoutSchema === plan)
      throw new Error(`pg-boss's construction plan has no ${CREATE_SCHEMA} statement`);
    await runPlan(db, withoutSchema);
  } else if (installed < current) await runPlan(db, PgBoss.getMigrationPlans(name, String(installed)));
}

/** pg-boss's schema version in the queue schema; undefined when it is not installed there. */
export async function queueVersion(db: Kysely<Database>, schema: string): Promise<number | undefined> {
  const table = `${quoteIdent(queueSchema(schema))}.version`;
  const found = await sql<{ found: boolean }>`select to_regclass(${table}) is not null as found`.execute(db);
  if (found.rows[0]?.found !== true) return undefined;
  const { rows } = await sql<{ version: number }>`select version from ${sql.raw(table)}`.execute(db);
  return rows[0]?.version;
}

async function runPlan(db: Kysely<Database>, plan: string): Promise<void> {
  try {
    // Several statements in one simple query: pg-boss's plans hold its advisory lock throughout.
    await sql.raw(plan).execute(db);
  } catch (error) {
    // Another migrate installed it first: done.
    const code = (error as { code?: unknown }).code;
    if (code !== DUPLICATE_OBJECT && code !== DUPLICATE_TABLE && code !== DIVISION_BY_ZERO) throw error;
  }
}

const CREATE_SCHEMA = /CREATE SCHEMA IF NOT EXISTS [^;]+;/;
const INSERT_VERSION = /\.version\(version\) VALUES \('(\d+)'\)/;
const DUPLICATE_OBJECT = '42710';
const DUPLICATE_TABLE = '42P07';
/** pg-boss's migration plans divide by zero when the schema is at the version already. */
const DIVISION_BY_ZERO = '22012';

function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
