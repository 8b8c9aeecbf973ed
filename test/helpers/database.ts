import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { type ClonedDatabase, cloneTemplate } from '../../scripts/dev-database/template.js';
import { migrateToLatest } from '../../src/db/migrator.js';
import type { TestDatabaseContext } from './provided-context.js';

/** A fresh, migrated database of its own: clone of the run's template (test/helpers/global-setup.ts). */
export interface TestDatabase extends Omit<ClonedDatabase, 'name'> {
  /** The warehouse schema; every pool connection's search_path points at it. */
  schema: string;
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
  const { url, pool, db, drop } = await cloneTemplate(context.adminUrl, context.template, name, {
    schema,
    applicationName: 'insights-sync-tests',
  });
  if (schema !== context.schema) {
    const outcome = await migrateToLatest(db, schema);
    if (outcome.error !== undefined)
      throw new Error(`migrating schema ${schema} failed`, { cause: outcome.error });
  }
  return { url, schema, pool, db, drop };
}

/** Connection string of a database on the test server from which others can be created or dropped. */
export function databaseServerUrl(): string {
  return inject('testDatabase').adminUrl;
}

/**
 * `url` carrying a password that output must never show. A server that checks passwords (the
 * embedded one, a user's own) needs its real one, which is then the secret to look for; a
 * trust-auth server ignores passwords, so `canary` stands in.
 */
export function withSecretPassword(url: string, canary: string): { url: string; secret: string } {
  const parsed = new URL(url);
  if (parsed.password === '') parsed.password = canary;
  return { url: parsed.toString(), secret: decodeURIComponent(parsed.password) };
}
