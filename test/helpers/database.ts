import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type pg from 'pg';
import { inject } from 'vitest';
import { createDb, createPool } from '../../src/db/connection.js';
import type { Database } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrator.js';
import { createDatabase, databaseUrl, dropDatabase, withClient } from './database-admin.js';
import type { TestDatabaseContext } from './provided-context.js';

/** A fresh, migrated database of its own: clone of the run's template (test/helpers/global-setup.ts). */
export interface TestDatabase {
  /** Connection string of the new database. */
  url: string;
  /** The warehouse schema; every pool connection's search_path points at it. */
  schema: string;
  pool: pg.Pool;
  db: Kysely<Database>;
  /** Closes db and pool and drops the database (idempotent). */
  drop(): Promise<void>;
}

let created = 0;

/**
 * Typical use, one database per test file:
 *
 *   let t: TestDatabase;
 *   beforeAll(async () => { t = await createTestDatabase(); });
 *   afterAll(() => t.drop());
 *
 * A schema other than the template's is migrated into the new database on the spot (slower).
 */
export async function createTestDatabase(options: { schema?: string } = {}): Promise<TestDatabase> {
  const context: TestDatabaseContext = inject('testDatabase');
  const schema = options.schema ?? context.schema;
  // Worker pid, a counter and random bytes: unique across concurrent test files and calls.
  created += 1;
  const name = `${context.databasePrefix}${process.pid}_${created}_${randomBytes(3).toString('hex')}`;
  await withClient(context.adminUrl, (admin) => createDatabase(admin, name, context.template));

  const url = databaseUrl(context.adminUrl, name);
  const pool = createPool({ url, schema, applicationName: 'insights-sync-tests' });
  const db = createDb(pool);
  if (schema !== context.schema) {
    const outcome = await migrateToLatest(db, schema);
    if (outcome.error !== undefined)
      throw new Error(`migrating schema ${schema} failed`, { cause: outcome.error });
  }

  let dropped: Promise<void> | undefined;
  const drop = () => {
    dropped ??= (async () => {
      // A test may have closed the pool itself; ending it twice throws.
      if (!pool.ending) await db.destroy();
      await withClient(context.adminUrl, (admin) => dropDatabase(admin, name));
    })();
    return dropped;
  };
  return { url, schema, pool, db, drop };
}

/** Connection string of a database on the test server from which others can be created or dropped. */
export function databaseServerUrl(): string {
  return inject('testDatabase').adminUrl;
}
