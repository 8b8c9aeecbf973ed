import { resolve } from 'node:path';
import type { Kysely } from 'kysely';
import type pg from 'pg';
import type { Config } from '../config/config.js';
import {
  CONNECT_TIMEOUT_MS,
  createDb,
  createPool,
  describeServer,
  isConnectionLost,
  isDatabaseTimeout,
  maskPassword,
} from '../db/connection.js';
import type { Database } from '../db/database.js';
import type { startEmbeddedPostgres } from '../db/embedded.js';
import { type LockWatch, watchLockWaits } from '../db/lock-watch.js';
import { migrateToLatest, migrationState, newerWarehouse, notMigrated } from '../db/migrator.js';
import { describeShortage, resourceShortage } from '../db/resource-shortage.js';
import { assertTrustedOwners } from '../db/trusted-owners.js';
import {
  CliError,
  CommandFailedError,
  DatabaseResourceError,
  DatabaseUnavailableError,
  errorMessage,
  InsightsError,
  LockError,
} from '../errors.js';
import type { Logger } from '../log/logger.js';
import { printProseErr } from '../log/terminal-text.js';

export interface Warehouse {
  pool: pg.Pool;
  db: Kysely<Database>;
  /** The connection string, password included: to connect with, never to print. */
  url: string;
  /** `url` with its password masked (`***`): what output may show. */
  displayUrl: string;
  /** The embedded database's password file (mode 0600), where to read its password; else undefined. */
  passwordFile: string | undefined;
  /** True when this process started the embedded database. */
  embedded: boolean;
  /**
   * The embedded database's data directory as output shows it: INSIGHTS_DATA_DIR, or, run as root
   * from where the postgres user cannot reach it, the directory used instead. Else undefined.
   */
  dataDir: string | undefined;
  /** Migrations this command applied (usually none; always none for a `read` command). */
  applied: string[];
}

/**
 * What a command does to the warehouse, and so what it does about migrations:
 * - `read` (status, report, check, forget --list) never migrates: a warehouse behind this version
 *   is said in one line, with the command that migrates it.
 * - `write` (sync, backfill, schedule, serve, forget, unforget, webhooks replay, demo) applies
 *   pending migrations, and only when some are pending; a role that cannot (it does not own the
 *   schema) is told to run `migrate` as the owner.
 * - `migrate` always runs the migrator.
 */
export type WarehouseAccess = 'read' | 'write' | 'migrate';

export interface WarehouseOptions {
  /** Default `write`. */
  access?: WarehouseAccess;
  /**
   * Longest a statement of this command may run (server-side statement_timeout, and client-side
   * for a server that never answers). Default: none, for sync, backfill and the like, whose
   * statements on a large day must not be cut short. Read-only checks pass READ_STATEMENT_TIMEOUT_MS.
   */
  statementTimeoutMs?: number;
  /** Longest a statement waits for a lock; default none (see createPool). */
  lockTimeoutMs?: number;
  /** Longest a transaction may sit idle before the server ends the session; default none. */
  idleInTransactionTimeoutMs?: number;
}

/**
 * Opens the warehouse for one command and always closes it: DATABASE_URL when set, otherwise
 * the embedded PostgreSQL under the data directory. A writing command applies pending migrations
 * first, so a new database is usable at once and an old one is brought up to date; a reading
 * command migrates nothing (WarehouseAccess).
 *
 * Every connection gives up after CONNECT_TIMEOUT_MS; a database that cannot be reached or does
 * not answer ends the command with DatabaseUnavailableError (exit code 5), in one line.
 */
export async function usingWarehouse<T>(
  config: Readonly<Config>,
  logger: Logger,
  fn: (warehouse: Warehouse) => Promise<T>,
  options: WarehouseOptions = {},
): Promise<T> {
  let embedded: Awaited<ReturnType<typeof startEmbeddedPostgres>> | undefined;
  let url = config.databaseUrl;
  let embeddedDataDir: string | undefined;
  if (url === undefined && !config.embedded)
    throw new CliError(
      `DATABASE_URL is not set: set it to the warehouse (postgres://..., in the environment or in .env), or pass --embedded (or set INSIGHTS_EMBEDDED=1) to use the embedded PostgreSQL in ${config.dataDir}`,
    );
  if (url === undefined) {
    const dataDir = resolve(config.dataDir);
    // Only without DATABASE_URL: a command on a server never loads the embedded server's code.
    const { startEmbeddedPostgres } = await import('../db/embedded.js');
    embedded = await startEmbeddedPostgres({ dataDir, port: config.embeddedPort, logger }).catch(
      (error: unknown) => {
        throw embeddedStartError(dataDir, error);
      },
    );
    url = embedded.url;
    embeddedDataDir = embedded.dataDir === dataDir ? config.dataDir : embedded.dataDir;
    const moved = embedded.dataDir === dataDir ? '' : `, as the postgres user cannot reach ${config.dataDir}`;
    // Printed, not logged: psql and BI tools can connect while this command runs. The password
    // is masked (this line ends up in cron logs); it is in a file only its owner can read.
    printProseErr(
      `DATABASE_URL is not set: embedded PostgreSQL (data in ${embeddedDataDir}${moved}) at ${maskPassword(url)} while this command runs; password in ${embedded.passwordFile}\n`,
    );
  }
  const pool = createPool({
    url,
    schema: config.schema,
    statementTimeoutMs: options.statementTimeoutMs,
    lockTimeoutMs: options.lockTimeoutMs,
    idleInTransactionTimeoutMs: options.idleInTransactionTimeoutMs,
  });
  const db = createDb(pool);
  const where = describeServer(url);
  // A writing command that waits on another session's lock says so (a sync window held up by
  // the webhook receiver's lock on feedback, for one).
  const watch: LockWatch | undefined =
    (options.access ?? 'write') === 'write' ? watchLockWaits(pool, url, logger) : undefined;
  try {
    try {
      // Bounded even without a statement timeout: `select 1` answers at once on a live server.
      await pool.query(PROBE);
    } catch (error) {
      // A session that does not keep our timeouts (createPool): its own line.
      if (error instanceof InsightsError) throw error;
      throw new DatabaseUnavailableError(
        isDatabaseTimeout(error)
          ? `the database at ${where} did not answer within ${CONNECT_TIMEOUT_MS / 1000} s; check DATABASE_URL and that the server is running and not overloaded`
          : `cannot connect to the database at ${where} (${describeConnectionError(error)}); check DATABASE_URL and that the server is running`,
        {},
        { cause: error },
      );
    }
    const access = options.access ?? 'write';
    const applied = await migrateFor(db, config.schema, access, where);
    // A count and the range, not the list: a new warehouse applies every migration, and a list
    // of them would fill the screen above the first run's progress bar.
    if (applied.length > 0)
      logger.info({ migrations: applied.length, from: applied[0], to: applied.at(-1) }, 'migrations applied');
    if (access === 'read') await assertTrustedOwners(db, config.schema);
    return await fn({
      pool,
      db,
      url,
      displayUrl: maskPassword(url),
      passwordFile: embedded?.passwordFile,
      embedded: embedded !== undefined,
      dataDir: embeddedDataDir,
      applied,
    });
  } catch (error) {
    // A role that may not read what the command reads (docs/roles.sql says who may): one line.
    if (options.access === 'read' && (error as { code?: unknown }).code === INSUFFICIENT_PRIVILEGE)
      throw new CliError(
        `database user ${userOf(url)} may not read what this command reads (${errorMessage(error)}): run it as the owner, the sync role or a member of insights_monitor (docs/roles.sql)`,
        {},
        { cause: error },
      );
    // A statement beyond its timeout, or a connection that did not open: one line, exit code 5.
    if (!(error instanceof InsightsError) && isDatabaseTimeout(error))
      throw new DatabaseUnavailableError(
        `the database at ${where} did not answer in time (${errorMessage(error)}); check that the server is running and not overloaded`,
        {},
        { cause: error },
      );
    // The database cannot take the work (a full disk, memory, connections, a limit): one line, exit code 5.
    const shortage = error instanceof InsightsError ? undefined : resourceShortage(error);
    if (shortage !== undefined)
      throw new DatabaseResourceError(
        `the database at ${where} cannot do what this command asks: ${describeShortage(shortage)}; ${shortage.next}`,
        {},
        { cause: error },
      );
    // The connection went away mid-command (server restarted, network cut): one line, exit code 5.
    // A run left 'running' is shown interrupted by status and recorded so by the next run.
    if (!(error instanceof InsightsError) && isConnectionLost(error))
      throw new DatabaseUnavailableError(
        `lost the connection to the database at ${where} (${describeConnectionError(error)}); check that the server is running and reachable: a run in progress is shown interrupted by \`insights-sync status\`, and the next run takes its days again`,
        {},
        { cause: error },
      );
    throw error;
  } finally {
    await watch?.stop();
    // A forced exit (a second Ctrl+C) has ended the pool already (closeAtForcedExit): ending it
    // again would throw over the exit's own line.
    if (!pool.ending) await db.destroy();
    await embedded?.stop();
  }
}

/** Applies what `access` calls for (see WarehouseAccess); returns the migrations applied. */
async function migrateFor(
  db: Kysely<Database>,
  schema: string,
  access: WarehouseAccess,
  where: string,
): Promise<string[]> {
  const state = await migrationState(db, schema);
  // Before anything else, `migrate` included: Kysely's migrator would fail on the unknown names,
  // in words that do not say what to do.
  if (state.unknown.length > 0) throw new CliError(newerWarehouse(state, schema, where));
  if (access !== 'migrate') {
    if (state.pending.length === 0) return [];
    if (access === 'read') throw new CliError(notMigrated(state, schema, where));
    if (!state.canMigrate)
      throw new CliError(
        `schema ${schema} at ${where} has ${state.pending.length} migration(s) to apply (${state.pending.join(', ')}) and role ${state.role} cannot apply them (it does not own the schema): run insights-sync migrate as the schema owner`,
      );
  }
  const outcome = await migrateToLatest(db, schema);
  if (outcome.error !== undefined)
    throw new CommandFailedError(
      `migrating schema ${schema} failed: ${errorMessage(outcome.error)}`,
      {},
      {
        cause: outcome.error,
      },
    );
  return outcome.applied;
}

/**
 * pg reads query_timeout per query (client.js) though its types only declare it on the client
 * config: hence the widened type.
 */
const PROBE: pg.QueryConfig & { query_timeout: number } = {
  text: 'select 1',
  query_timeout: CONNECT_TIMEOUT_MS,
};

/** One clear line: which directory, and what to do. */
function embeddedStartError(dataDir: string, error: unknown): Error {
  // A data directory or server that is not this tool's: the operator's setting to fix, as is.
  if (error instanceof CliError) return error;
  const message = errorMessage(error);
  const options = { cause: error };
  // Another command of this tool owns the server: like the warehouse lock, one at a time.
  if (message.includes('is in use by process'))
    return new LockError(
      `${message}; another insights-sync command is using the embedded database: wait for it to end, or set DATABASE_URL to a server that several commands can share`,
      {},
      options,
    );
  return new DatabaseUnavailableError(
    `cannot start the embedded PostgreSQL in ${dataDir}: ${message}; set DATABASE_URL to use a PostgreSQL server instead`,
    {},
    options,
  );
}

const INSUFFICIENT_PRIVILEGE = '42501';

/** The user of a connection string, never its password. */
function userOf(url: string): string {
  try {
    return decodeURIComponent(new URL(url).username) || 'of DATABASE_URL';
  } catch {
    return 'of DATABASE_URL';
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
