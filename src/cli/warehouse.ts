import { resolve } from 'node:path';
import type { Kysely } from 'kysely';
import type pg from 'pg';
import type { Config } from '../config/config.js';
import { createDb, createPool } from '../db/connection.js';
import type { Database } from '../db/database.js';
import { startEmbeddedPostgres } from '../db/embedded.js';
import { migrateToLatest } from '../db/migrator.js';
import { CliError } from '../errors.js';
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
    embedded = await startEmbeddedPostgres({ dataDir, port: config.embeddedPort, logger });
    url = embedded.url;
    logger.info(
      { dataDir, port: config.embeddedPort },
      'DATABASE_URL is not set: using the embedded PostgreSQL',
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

function describeConnectionError(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: string }).code;
    // Messages from pg name host and port, never the password.
    return code ? `${code}: ${error.message}` : error.message;
  }
  return String(error);
}
