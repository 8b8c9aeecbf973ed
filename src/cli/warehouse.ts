import { resolve } from 'node:path';
import type { Kysely } from 'kysely';
import type pg from 'pg';
import type { Config } from '../config/config.js';
import { createDb, createPool } from '../db/connection.js';
import type { Database } from '../db/database.js';
import { startEmbeddedPostgres } from '../db/embedded.js';
import { migrateToLatest } from '../db/migrator.js';
import { CliError, errorMessage, LockError } from '../errors.js';
import type { Logger } from '../log/logger.js';

export interface Warehouse {
  pool: pg.Pool;
  db: Kysely<Database>;
  url: string;
  /** True when this process started the embedded database. */
  embedded: boolean;
  /** Migrations this command applied (usually none). */
  applied: string[];
}

/**
 * Opens the warehouse for one command and always closes it: DATABASE_URL when set, otherwise
 * the embedded PostgreSQL under the data directory. Migrations are applied first, so a new
 * database is usable at once and an old one is brought up to date.
 */
export async function usingWarehouse<T>(
  config: Readonly<Config>,
  logger: Logger,
  fn: (warehouse: Warehouse) => Promise<T>,
): Promise<T> {
  let embedded: Awaited<ReturnType<typeof startEmbeddedPostgres>> | undefined;
  let url = config.databaseUrl;
  if (url === undefined) {
    const dataDir = resolve(config.dataDir);
    embedded = await startEmbeddedPostgres({ dataDir, port: config.embeddedPort, logger }).catch(
      (error: unknown) => {
        throw embeddedStartError(dataDir, error);
      },
    );
    url = embedded.url;
    // Printed, not logged: psql and BI tools can connect with it while this command runs.
    process.stderr.write(
      `DATABASE_URL is not set: embedded PostgreSQL (data in ${config.dataDir}) at ${url} while this command runs\n`,
    );
  }
  const pool = createPool({ url, schema: config.schema });
  const db = createDb(pool);
  try {
    try {
      await pool.query('select 1');
    } catch (error) {
      throw new CliError(
        `cannot connect to the database (${describeConnectionError(error)}); check DATABASE_URL and that the server is running`,
      );
    }
    const outcome = await migrateToLatest(db, config.schema);
    if (outcome.error !== undefined) {
      throw new CliError(`migrating schema ${config.schema} failed: ${String(outcome.error)}`);
    }
    if (outcome.applied.length > 0) logger.info({ applied: outcome.applied }, 'migrations applied');
    return await fn({ pool, db, url, embedded: embedded !== undefined, applied: outcome.applied });
  } finally {
    await db.destroy();
    await embedded?.stop();
  }
}

/** One clear line: which directory, and what to do. */
function embeddedStartError(dataDir: string, error: unknown): Error {
  const message = errorMessage(error);
  const options = { cause: error };
  // Another command of this tool owns the server: like the warehouse lock, one at a time.
  if (message.includes('is in use by process'))
    return new LockError(
      `${message}; another insights-sync command is using the embedded database: wait for it to end, or set DATABASE_URL to a server that several commands can share`,
      {},
      options,
    );
  return new CliError(
    `cannot start the embedded PostgreSQL in ${dataDir}: ${message}; set DATABASE_URL to use a PostgreSQL server instead`,
    {},
    options,
  );
}

function describeConnectionError(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: string }).code;
    // Messages from pg name host and port, never the password.
    return code ? `${code}: ${error.message}` : error.message;
  }
  return String(error);
}
