import type pg from 'pg';
import type { TestProject } from 'vitest/node';
import { createDb, createPool } from '../../src/db/connection.js';
import { migrateToLatest } from '../../src/db/migrator.js';
import {
  createDatabase,
  databasesStartingWith,
  databaseUrl,
  dropDatabase,
  withClient,
} from './database-admin.js';
import { startDatabaseServer } from './database-server.js';
import type { TestDatabaseContext } from './provided-context.js';

const SCHEMA = 'insights';
/** Test runs never last this long: older leftovers are from runs killed before their teardown. */
const LEFTOVER_AGE_MS = 60 * 60 * 1000;

/**
 * Runs once per `vitest run`, in the main process: finds a PostgreSQL server, migrates a template
 * database once, and hands its name to the test files, which clone it (createTestDatabase()):
 * a clone takes milliseconds, migrating each test database would take seconds.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const started = Date.now();
  const server = await startDatabaseServer();
  // pid and start time make names unique per run, and let a later run recognise stale ones.
  const runTag = `${process.pid}_${started.toString(36)}`;
  const template = `insights_tpl_${runTag}`;
  const databasePrefix = `insights_test_${runTag}_`;

  try {
    await withClient(server.adminUrl, async (admin) => {
      await dropLeftovers(admin);
      await createDatabase(admin, template);
    });
    const pool = createPool({ url: databaseUrl(server.adminUrl, template), schema: SCHEMA, max: 1 });
    const db = createDb(pool);
    try {
      const outcome = await migrateToLatest(db, SCHEMA);
      if (outcome.error !== undefined)
        throw new Error('migrating the test template failed', { cause: outcome.error });
    } finally {
      await db.destroy();
    }
    // Nobody may connect to the template any more: CREATE DATABASE ... TEMPLATE fails while anyone is.
    await withClient(server.adminUrl, async (admin) => {
      await admin.query(`alter database ${admin.escapeIdentifier(template)} with allow_connections false`);
    });
  } catch (error) {
    await server.stop();
    throw error;
  }

  const context: TestDatabaseContext = {
    adminUrl: server.adminUrl,
    template,
    schema: SCHEMA,
    databasePrefix,
  };
  project.provide('testDatabase', context);
  console.info(
    `test database server: ${server.kind}, template ${template} ready in ${Date.now() - started} ms`,
  );

  return async () => {
    try {
      await withClient(server.adminUrl, async (admin) => {
        for (const name of await databasesStartingWith(admin, databasePrefix))
          await dropDatabase(admin, name);
        await dropDatabase(admin, template);
      });
    } finally {
      await server.stop();
    }
  };
}

/** Databases of earlier runs on a shared server that were killed before their teardown ran. */
async function dropLeftovers(admin: pg.Client): Promise<void> {
  for (const name of await databasesStartingWith(admin, 'insights_t')) {
    const match = /^insights_(?:tpl|test)_\d+_([0-9a-z]+)/.exec(name);
    const startedAt = match?.[1] === undefined ? Number.NaN : Number.parseInt(match[1], 36);
    if (Date.now() - startedAt > LEFTOVER_AGE_MS) await dropDatabase(admin, name).catch(() => {});
  }
}
