import { hostname } from 'node:os';
import pg from 'pg';
import { LockError } from '../errors.js';
import { CONNECT_TIMEOUT_MS } from './connection.js';

/**
 * The warehouse lock: one run (sync, backfill, scheduled) at a time per warehouse schema, across
 * processes and machines. A session-level advisory lock held on a dedicated connection: it ends
 * with its session, so a killed process (even SIGKILL) or a dropped connection frees it.
 */
export interface RunLock {
  /** Aborted when the lock's connection is lost: the lock is gone and the run must stop. */
  readonly lost: AbortSignal;
  release(): Promise<void>;
}

export interface LockHolder {
  /** pid and host of the insights-sync process, from its connection's application_name. */
  pid: number | null;
  host: string | null;
  /** The holder's PostgreSQL backend, when its process is not an insights-sync one we can name. */
  backendPid: number;
  since: Date | null;
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

/** Two int4 keys: this tool's namespace and the schema, so other users of advisory locks never collide. */
const NAMESPACE = 'insights-sync';
const LOCK_KEYS = 'hashtext($1), hashtext($2)';

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
  try {
    let waiting = false;
    for (;;) {
      const { rows } = await client.query<{ locked: boolean }>(
        `select pg_try_advisory_lock(${LOCK_KEYS}) as locked`,
        [NAMESPACE, schema],
      );
      if (rows[0]?.locked === true) break;
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
      // Ending the session releases the lock; an explicit unlock would only cost a round trip.
      await client.end().catch(() => {});
    },
  };
}

/** Who holds the lock on `schema` in this database, if PostgreSQL lets us see it. */
export async function findHolder(client: pg.ClientBase, schema: string): Promise<LockHolder | undefined> {
  const { rows } = await client.query<{ pid: number; application_name: string | null; since: Date | null }>(
    `select a.pid, a.application_name, a.state_change as since
       from pg_locks l join pg_stat_activity a on a.pid = l.pid
      where l.locktype = 'advisory' and l.granted and l.objsubid = 2
        and l.database = (select oid from pg_database where datname = current_database())
        and l.classid = hashtext($1)::oid and l.objid = hashtext($2)::oid`,
    [NAMESPACE, schema],
  );
  const row = rows[0];
  if (row === undefined) return undefined;
  const named = /pid=(\d+) host=(\S+)/.exec(row.application_name ?? '');
  return {
    pid: named?.[1] === undefined ? null : Number(named[1]),
    host: named?.[2] ?? null,
    backendPid: row.pid,
    since: row.since,
  };
}

export function describeHolder(schema: string, holder: LockHolder | undefined): string {
  const who =
    holder === undefined
      ? ''
      : holder.pid !== null
        ? ` (pid ${holder.pid} on host ${holder.host ?? '?'}${since(holder)})`
        : ` (PostgreSQL backend ${holder.backendPid}${since(holder)})`;
  return `another insights-sync run holds the lock on schema ${schema}${who}`;
}

function since(holder: LockHolder): string {
  return holder.since === null ? '' : ` since ${holder.since.toISOString()}`;
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
