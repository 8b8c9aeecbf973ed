import type { Kysely } from 'kysely';
import type pg from 'pg';
import { createDb, createPool } from '../../src/db/connection.js';
import type { Database } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrator.js';
import { createDatabase, databasesStartingWith, databaseUrl, dropDatabase, withClient } from './admin.js';

/**
 * Development support shared by the tests, the benchmarks and the scripts: a migrated template
 * database, created once, and clones of it, each in milliseconds (migrating each one would take
 * seconds). The server comes from ./server.ts, the statements from ./admin.ts.
 */

/** A clone of the template: a fresh, migrated warehouse of its own. */
export interface ClonedDatabase {
  name: string;
  url: string;
  pool: pg.Pool;
  db: Kysely<Database>;
  /** Closes the pool (if still open) and drops the database; idempotent. */
  drop(): Promise<void>;
}

/** Creates `template`, migrates `schema` into it and closes it to connections, as cloning needs. */
export async function migrateTemplate(adminUrl: string, template: string, schema: string): Promise<void> {
  await withClient(adminUrl, (admin) => createDatabase(admin, template));
  const pool = createPool({ url: databaseUrl(adminUrl, template), schema, max: 1 });
  const db = createDb(pool);
  try {
    const outcome = await migrateToLatest(db, schema);
    if (outcome.error !== undefined)
      throw new Error(`migrating the template ${template} failed`, { cause: outcome.error });
  } finally {
    await db.destroy();
  }
  // Nobody may connect to the template any more: CREATE DATABASE ... TEMPLATE fails while anyone is.
  await withClient(adminUrl, async (admin) => {
    await admin.query(`alter database ${admin.escapeIdentifier(template)} with allow_connections false`);
  });
}

export interface CloneOptions {
  /** The warehouse schema every pool connection's search_path points at. */
  schema: string;
  applicationName: string;
  /** Pool size; default pg's. */
  max?: number;
}

/** A new database `name` cloned from `template`, with its pool and Kysely instance. */
export async function cloneTemplate(
  adminUrl: string,
  template: string,
  name: string,
  options: CloneOptions,
): Promise<ClonedDatabase> {
  await withClient(adminUrl, (admin) => createDatabase(admin, name, template));
  const url = databaseUrl(adminUrl, name);
  const pool = createPool({
    url,
    schema: options.schema,
    applicationName: options.applicationName,
    max: options.max,
  });
  const db = createDb(pool);
  let dropped: Promise<void> | undefined;
  const drop = () => {
    dropped ??= (async () => {
      // The caller may have closed the pool itself; ending it twice throws.
      if (!pool.ending) await db.destroy();
      await withClient(adminUrl, (admin) => dropDatabase(admin, name));
    })();
    return dropped;
  };
  return { name, url, pool, db, drop };
}

/** Drops every database whose name starts with `prefix`, then `template`. */
export async function dropClonesAndTemplate(
  adminUrl: string,
  prefix: string,
  template: string,
): Promise<void> {
  await withClient(adminUrl, async (admin) => {
    for (const name of await databasesStartingWith(admin, prefix)) await dropDatabase(admin, name);
    await dropDatabase(admin, template);
  });
}

/**
 * Databases of earlier runs on a shared server, killed before their teardown: those starting
 * with `prefix` whose start time (base 36, the first group of `pattern`) is older than `maxAgeMs`.
 */
export async function dropLeftovers(
  admin: pg.Client,
  prefix: string,
  pattern: RegExp,
  maxAgeMs: number,
): Promise<void> {
  for (const name of await databasesStartingWith(admin, prefix)) {
    const match = pattern.exec(name);
    const startedAt = match?.[1] === undefined ? Number.NaN : Number.parseInt(match[1], 36);
    if (Date.now() - startedAt > maxAgeMs) await dropDatabase(admin, name).catch(() => {});
  }
}
