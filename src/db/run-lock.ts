import { hostname } from 'node:os';
import { CompiledQuery, type Kysely } from 'kysely';
import pg from 'pg';
import { CliError, LockError } from '../errors.js';
import { bookkeepingSchema } from './bookkeeping.js';
import { CONNECT_TIMEOUT_MS } from './connection.js';
import type { Database } from './database.js';
import { describeHolder, type LockHolder } from './lock-holder.js';

/**
 * The warehouse lock: one run (sync, backfill, scheduled) at a time per warehouse schema, across
 * processes and machines. The run locks the schema's run_lock table (migration 0010) in SHARE
 * UPDATE EXCLUSIVE mode, inside a transaction its dedicated connection keeps open: the lock ends
 * with the session, so a killed process (even SIGKILL) or a dropped connection frees it.
 *
 * Why this mode: LOCK TABLE in any mode above ROW EXCLUSIVE needs UPDATE, DELETE or TRUNCATE on
 * the table, which only the sync role has (docs/roles.sql); a read-only role can take none of it.
 * And nothing a read-only role can hold conflicts with it: PREPARE of an INSERT or a SELECT ... FOR
 * UPDATE keeps the ROW EXCLUSIVE or ROW SHARE lock of its parse step, without any privilege, for
 * as long as its transaction lasts; that blocks EXCLUSIVE mode, not this one
 * (test/reliability/security.trials.ts). The open transaction has no xid and, in READ COMMITTED,
 * no snapshot between statements: it holds back no vacuum.
 */
export interface RunLock {
  /** Aborted when the lock's connection is lost: the lock is gone and the run must stop. */
  readonly lost: AbortSignal;
  release(): Promise<void>;
}

export interface AcquireRunLockOptions {
  url: string;
  schema: string;
  /** Queue behind the holder (poll until it is free) instead of failing at once. */
  wait?: boolean;
  /** Ends a wait early (shutdown). */
  signal?: AbortSignal;
  /** Between two attempts while waiting. Default 1 s. */
  pollMs?: number;
  /** Appended to the busy message when not waiting. Default: how to queue instead. */
  busyHint?: string;
  /** Called once, when the lock is busy and we start waiting. */
  onWait?: (holder: LockHolder | undefined) => void;
}

/** The lock's mode: self-conflicting, and conflicting with nothing a read-only role can hold. */
const LOCK_MODE = 'share update exclusive';
/** Modes pg_locks shows that conflict with LOCK_MODE: whoever holds one of them keeps a run out. */
const CONFLICTING = [
  'ShareUpdateExclusiveLock',
  'ShareLock',
  'ShareRowExclusiveLock',
  'ExclusiveLock',
  'AccessExclusiveLock',
];
/**
 * Session settings a server or role default must not impose on the lock's session: it is idle in
 * a transaction for the whole run. transaction_timeout exists from PostgreSQL 17 on; the query
 * sets only those the server knows.
 */
const NO_TIMEOUTS = `select set_config(name, '0', false) from pg_settings
  where name in ('idle_in_transaction_session_timeout', 'idle_session_timeout', 'transaction_timeout', 'lock_timeout')`;

const LOCK_NOT_AVAILABLE = '55P03';
const INSUFFICIENT_PRIVILEGE = '42501';
const UNDEFINED_TABLE = '42P01';

export async function acquireRunLock(options: AcquireRunLockOptions): Promise<RunLock> {
  const { schema } = options;
  const client = new pg.Client({
    connectionString: options.url,
    application_name: applicationName(),
    // A dead peer must be noticed: the lock dies with the session, the run must not outlive it.
    keepAlive: true,
    // Connecting gives up like every other connection; waiting for the lock (--wait) does not.
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
  });
  const lost = new AbortController();
  let released = false;
  const onLost = (why: string) => {
    if (!released && !lost.signal.aborted)
      lost.abort(new LockError(`lost the lock on schema ${schema}: ${why}`));
  };
  client.on('error', (error) => onLost(error.message));
  client.on('end', () => onLost('its connection ended'));
  await client.connect();
  const table = `${client.escapeIdentifier(bookkeepingSchema(schema))}.run_lock`;
  try {
    await client.query(NO_TIMEOUTS);
    let waiting = false;
    for (;;) {
      // READ COMMITTED whatever the defaults: a snapshot kept between statements would hold back vacuum.
      await client.query('begin isolation level read committed');
      const locked = await client.query(`lock table ${table} in ${LOCK_MODE} mode nowait`).then(
        () => true,
        (error: unknown) => {
          if (sqlState(error) === LOCK_NOT_AVAILABLE) return false;
          throw lockFailure(schema, error);
        },
      );
      if (locked) break;
      await client.query('rollback');
      const holder = await findHolder(client, schema);
      if (!options.wait)
        throw new LockError(
          `${describeHolder(schema, holder)}${options.busyHint ?? '; rerun with --wait to queue'}`,
        );
      if (!waiting) options.onWait?.(holder);
      waiting = true;
      await pause(options.pollMs ?? 1000, options.signal);
      if (options.signal?.aborted)
        throw new LockError(`stopped while waiting for the lock on schema ${schema}`);
    }
  } catch (error) {
    released = true;
    await client.end().catch(() => {});
    throw error;
  }
  return {
    lost: lost.signal,
    async release() {
      if (released) return;
      released = true;
      // Ending the session ends its transaction, and the lock with it; a commit would only cost a round trip.
      await client.end().catch(() => {});
    },
  };
}

/** Who holds the lock on `schema` in this database (or a lock that conflicts with it), if any. */
async function findHolder(
  client: Pick<pg.ClientBase, 'query'>,
  schema: string,
): Promise<LockHolder | undefined> {
  const { rows } = await client.query<HolderRow>(HOLDER_QUERY, [
    `${quoteIdent(bookkeepingSchema(schema))}.run_lock`,
    CONFLICTING,
  ]);
  return rows[0] === undefined ? undefined : holderFromRow(rows[0]);
}

/** As findHolder, for a Kysely instance whose search_path is the warehouse schema (status). */
export async function runLockHolder(db: Kysely<Database>): Promise<LockHolder | null> {
  const { rows } = await db.executeQuery<HolderRow>(
    CompiledQuery.raw(HOLDER_QUERY, ['run_lock', CONFLICTING]),
  );
  return rows[0] === undefined ? null : holderFromRow(rows[0]);
}

interface HolderRow {
  pid: number;
  usename: string | null;
  application_name: string | null;
  since: Date | null;
  ours: boolean;
}

/** Our own mode first: that is a run; another conflicting mode is DDL or autovacuum. */
const HOLDER_QUERY = `select a.pid, a.usename, a.application_name, coalesce(a.xact_start, a.backend_start) as since,
         l.mode = 'ShareUpdateExclusiveLock' as ours
    from pg_locks l join pg_stat_activity a on a.pid = l.pid
   where l.locktype = 'relation' and l.granted and l.relation = to_regclass($1)
     and l.database = (select oid from pg_database where datname = current_database())
     and l.mode = any($2::text[])
   order by ours desc, since
   limit 1`;

function holderFromRow(row: HolderRow): LockHolder {
  // application_name is the client's to choose: read only from a session that holds the run
  // lock itself, which only a role allowed to take it can.
  const named = row.ours ? /pid=(\d+) host=(\S+)/.exec(row.application_name ?? '') : null;
  return {
    pid: named?.[1] === undefined ? null : Number(named[1]),
    host: named?.[2] ?? null,
    user: row.usename,
    backendPid: row.pid,
    since: row.since,
  };
}

/** A lock that cannot be taken for another reason than a holder: one line that says what to do. */
function lockFailure(schema: string, error: unknown): Error {
  const code = sqlState(error);
  if (code === INSUFFICIENT_PRIVILEGE)
    return new CliError(
      `this database user may not take the run lock of schema ${schema} (it needs UPDATE on ${bookkeepingSchema(schema)}.run_lock): run sync, backfill and schedule as the sync role of docs/roles.sql`,
      {},
      { cause: error },
    );
  if (code === UNDEFINED_TABLE)
    return new CliError(
      `schema ${schema} has no run_lock table: run \`insights-sync migrate\``,
      {},
      { cause: error },
    );
  return error instanceof Error ? error : new Error(String(error));
}

function sqlState(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'string'
    ? error.code
    : undefined;
}

function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** What the holder shows to others in pg_stat_activity; PostgreSQL keeps 63 bytes of it. */
function applicationName(): string {
  return `insights-sync pid=${process.pid} host=${hostname()}`.slice(0, 63);
}

function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
