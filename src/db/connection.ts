import { Kysely } from 'kysely';
import pg from 'pg';
import { CliError } from '../errors.js';
import { SCHEMA_NAME, searchPath } from './bookkeeping.js';
import type { Database } from './database.js';
import { WarehouseDialect } from './migration-lock.js';

const { Pool, types } = pg;

const INT8_OID = 20;
const NUMERIC_OID = 1700;
const DATE_OID = 1082;

function parseInt8(value: string): number {
  const parsed = Number(value);
  if (!Number.isSafeInteger(parsed))
    throw new RangeError(`int8 value ${value} is beyond 2^53 and cannot be a number`);
  return parsed;
}

/**
 * pg returns int8 and numeric as strings and turns `date` into a local-time Date. Decided once:
 * int8 -> number (refusing unsafe values), numeric -> number, date -> 'YYYY-MM-DD' string.
 */
const typeParsers = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === INT8_OID) return parseInt8;
    if (oid === NUMERIC_OID) return (value: string) => Number(value);
    if (oid === DATE_OID) return (value: string) => value;
    return types.getTypeParser(oid, format);
  },
} as pg.CustomTypesConfig;

/**
 * How long opening one connection may take (TCP, TLS, authentication, up to ready-for-query).
 * A server on the same network answers in milliseconds; 10 s is slack for a cold cloud database,
 * and short enough that a check (`status`) against a server that accepts and never answers ends.
 */
export const CONNECT_TIMEOUT_MS = 10_000;

/**
 * For `status` and `report`: their queries read indexed ledgers and take well under a second on
 * years of data; 15 s means the database is not answering, and a monitoring check must hear so.
 */
export const READ_STATEMENT_TIMEOUT_MS = 15_000;

/**
 * Beyond a statement timeout, how long the client waits for the server's own cancellation before
 * it gives up on the connection itself: a live server answers the cancel at once; a silent one
 * (network stalled, host frozen) never does.
 */
const SILENT_SERVER_MARGIN_MS = 5_000;

/**
 * Memory for a connection's temporary tables, taken only as they grow (the default is 8MB). A
 * window's staging table holds its rows: 10,000 feedback items are about 12 MB, and past the
 * default every window wrote its staging table to disk and read it back.
 */
const TEMP_BUFFERS = '32MB';

export interface ConnectionOptions {
  url: string;
  /** Warehouse data schema; every connection's search_path holds it and its bookkeeping schema. */
  schema: string;
  max?: number;
  applicationName?: string;
  /** Limit on opening one connection; default CONNECT_TIMEOUT_MS. Waiting for a free pooled client is not limited. */
  connectTimeoutMs?: number;
  /**
   * Longest a statement may run, enforced by the server (`statement_timeout`) and, plus a margin,
   * by the client (a server that never answers). Default: none, since a sync's COPY and upserts of
   * a large day, the migrations, and waiting for a lock must not be cut short.
   */
  statementTimeoutMs?: number;
  /** Longest a statement waits for a lock (`lock_timeout`). Default: none (0). */
  lockTimeoutMs?: number;
  /** Longest a transaction may sit idle (`idle_in_transaction_session_timeout`). Default: none (0). */
  idleInTransactionTimeoutMs?: number;
}

/**
 * The timeouts a connection of ours runs with, in milliseconds, 0 for none. Each connection sets
 * all of them itself, in its startup packet, which takes precedence over the server's and the
 * role's defaults: a role may change its own defaults (ALTER ROLE ... SET lock_timeout = 0 needs
 * no privilege), and the webhook receiver's bounds must not be its own to lift. Each connection
 * reads them back before it is used (sessionTimeoutsDiffer).
 */
export interface SessionTimeouts {
  statement_timeout: number;
  lock_timeout: number;
  idle_in_transaction_session_timeout: number;
}

export function sessionTimeouts(options: ConnectionOptions): SessionTimeouts {
  return {
    statement_timeout: options.statementTimeoutMs ?? 0,
    lock_timeout: options.lockTimeoutMs ?? 0,
    idle_in_transaction_session_timeout: options.idleInTransactionTimeoutMs ?? 0,
  };
}

export function createPool(options: ConnectionOptions): pg.Pool {
  if (!SCHEMA_NAME.test(options.schema))
    throw new Error(`invalid schema name ${JSON.stringify(options.schema)}`);
  const statementTimeoutMs = options.statementTimeoutMs;
  const timeouts = sessionTimeouts(options);
  const settings = Object.entries(timeouts).map(([name, ms]) => `-c ${name}=${ms}`);
  const pool = new Pool({
    connectionString: options.url,
    max: options.max ?? 10,
    types: typeParsers,
    application_name: options.applicationName ?? 'insights-sync',
    options: [
      `-c search_path=${searchPath(options.schema)}`,
      `-c temp_buffers=${TEMP_BUFFERS}`,
      ...settings,
    ].join(' '),
    // Not the pool's connectionTimeoutMillis: that one also limits waiting for a free client, which
    // a sync with more windows in flight than connections does for as long as a window takes.
    Client: warehouseClient(options.connectTimeoutMs ?? CONNECT_TIMEOUT_MS, timeouts),
    ...(statementTimeoutMs === undefined
      ? {}
      : { query_timeout: statementTimeoutMs + SILENT_SERVER_MARGIN_MS }),
  });
  // A client that loses its server must not crash the process: idle ones report on the pool,
  // checked-out ones on themselves (the query in flight still rejects and is handled there).
  pool.on('error', () => {});
  const clients = new Set<pg.PoolClient>();
  poolClients.set(pool, clients);
  pool.on('connect', (client) => {
    client.on('error', () => {});
    clients.add(client);
  });
  pool.on('remove', (client) => clients.delete(client));
  return pool;
}

/** Each pool's open connections, for closeAtForcedExit. */
const poolClients = new WeakMap<pg.Pool, Set<pg.PoolClient>>();

/**
 * At a forced exit: no connection of the pool is handed out any more, and the server ends the
 * sessions of those it has, from a connection of its own. Exiting is not enough: a window's write
 * is one statement (store_window()), and one waiting on a lock (an analyst's, a migration's) when
 * the process exits would still run, and commit, once the lock is free; a session that is ended
 * rolls back what it was running. Returns how many sessions were ended.
 */
export async function closeAtForcedExit(pool: pg.Pool, url: string): Promise<number> {
  // pg knows each connection's server process from its start (BackendKeyData); @types/pg omits it.
  const pids = [...(poolClients.get(pool) ?? [])]
    .map((client) => (client as unknown as { processID: number | null }).processID)
    .filter((pid): pid is number => pid !== null);
  void pool.end().catch(() => {});
  if (pids.length === 0) return 0;
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  client.on('error', () => {});
  try {
    await client.connect();
    const { rows } = await client.query<{ ended: number }>(
      'select count(*) filter (where pg_terminate_backend(pid))::int as ended from unnest($1::int[]) as pid where pid <> pg_backend_pid()',
      [pids],
    );
    return rows[0]?.ended ?? 0;
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * A pg.Client that gives up on opening its connection after `ms` (pg: `connectionTimeoutMillis`)
 * and, once open, reads its session's timeouts back: a connection running with others than
 * `expected` (options in DATABASE_URL replace ours; a pooler or proxy may drop them) is closed and
 * its first query fails with one line saying which setting differs.
 */
function warehouseClient(ms: number, expected: SessionTimeouts): typeof pg.Client {
  return class extends pg.Client {
    constructor(config?: string | pg.ClientConfig) {
      super({
        ...(typeof config === 'string' ? { connectionString: config } : config),
        connectionTimeoutMillis: ms,
      });
    }

    override connect(): Promise<pg.Client>;
    override connect(callback: ConnectCallback): void;
    override connect(callback?: ConnectCallback): Promise<pg.Client> | undefined {
      // pg's pool listens for a client's errors only once connect() has called back: until the
      // check is done, a connection lost under it would be an 'error' nobody listens to (an
      // uncaught exception). The check's own query rejects with that loss and reports it.
      const untilChecked = () => {};
      this.on('error', untilChecked);
      const checked = super
        .connect()
        .then(async () => {
          const { rows } = await super.query<{ name: string; setting: string }>(READ_TIMEOUTS, [
            Object.keys(expected),
          ]);
          const found = Object.fromEntries(rows.map((r) => [r.name, Number(r.setting)]));
          const differs = sessionTimeoutsDiffer(expected, found);
          if (differs === undefined) return this;
          await this.end().catch(() => {});
          throw new CliError(
            `the database session does not keep the timeouts insights-sync sets (${differs}): remove options from DATABASE_URL, or connect without a pooler or proxy that drops startup options`,
          );
        })
        .finally(() => this.off('error', untilChecked));
      if (callback === undefined) return checked;
      // pg's pool passes a callback: (error) on failure, (null, client) once connected.
      const report = callback as (err: Error | null, client?: pg.Client) => void;
      checked.then(
        (client) => report(null, client),
        (error: Error) => report(error),
      );
      return undefined;
    }
  };
}

type ConnectCallback = ((err: Error) => void) | ((err: null, c: pg.Client) => void);

/** The session's values of SessionTimeouts, in milliseconds (pg_settings' unit for each). */
const READ_TIMEOUTS = 'select name, setting from pg_settings where name = any($1::text[])';

/**
 * Which of `expected` the session runs with another value of, as `name = found (expected N ms)`;
 * undefined when each is as expected.
 */
export function sessionTimeoutsDiffer(
  expected: SessionTimeouts,
  found: Readonly<Record<string, number>>,
): string | undefined {
  const wrong = Object.entries(expected)
    .filter(([name, ms]) => found[name] !== ms)
    .map(
      ([name, ms]) =>
        `${name} = ${found[name] === undefined ? 'unknown' : `${found[name]} ms`}, set ${ms} ms`,
    );
  return wrong.length === 0 ? undefined : wrong.join('; ');
}

/**
 * Whether an error means the database did not answer in time (connecting, or a statement beyond
 * its timeout), as opposed to answering with an error.
 */
export function isDatabaseTimeout(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  // 57014 is also a statement cancelled by an operator (pg_cancel_backend): told apart by its text.
  if (code === '57014') return /statement timeout/.test(error.message);
  return (
    // pg's messages: the connect timer fired (alone, or wrapped by the pool) / query_timeout fired.
    /^(timeout expired|Connection terminated due to connection timeout|Query read timeout)$/.test(
      error.message,
    ) ||
    (error.cause !== undefined && isDatabaseTimeout(error.cause))
  );
}

/** Socket errors of a connection that is gone or cannot be opened. */
const LOST_SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

/**
 * Whether an error means the connection to the database is gone (reset, refused, terminated, the
 * server shutting down), as opposed to the database answering with an error: SQLSTATE class 08
 * (connection exception) and 57P01-57P03 (shutdown, crash, cannot connect now), socket errors,
 * and pg's own "Connection terminated" messages. Follows `cause`.
 */
export function isConnectionLost(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (LOST_SOCKET_CODES.has(code) || /^08|^57P0[123]$/.test(code))) return true;
  return (
    /^Connection terminated|^Client has encountered a connection error/.test(error.message) ||
    (error.cause !== undefined && isConnectionLost(error.cause))
  );
}

/** host:port/database of a connection string: names the server, never the user or password. */
export function describeServer(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.host}${parsed.pathname}`;
  } catch {
    return 'DATABASE_URL';
  }
}

/** `url` with its password replaced by `***`: for output, where a password must never appear. */
export function maskPassword(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password === '') return url;
    parsed.password = '***';
    return parsed.toString();
  } catch {
    // Not a URL (a libpq keyword string?): say nothing of it rather than risk printing a secret.
    return '(connection string not shown)';
  }
}

export function createDb(pool: pg.Pool): Kysely<Database> {
  return new Kysely<Database>({ dialect: new WarehouseDialect(pool) });
}
