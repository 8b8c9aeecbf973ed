import pg from 'pg';
import type { Logger } from '../log/logger.js';
import { CONNECT_TIMEOUT_MS } from './connection.js';

/**
 * Says in the log when one of a command's statements waits on a lock held by another session: a
 * role that may update a table may also lock it in any mode (the webhook receiver, reachable from
 * the internet, updates feedback), and a window waiting on it would otherwise look like a stalled
 * run. The warning names the holder (pid, database user, application) and repeats while the wait
 * lasts. It watches the pool's own backends (pg's client.processID), from a connection of its
 * own, opened on the first check that finds a statement running, so a full pool never hides it.
 */
export interface LockWatch {
  stop(): Promise<void>;
}

export interface LockWatchOptions {
  /** How often it looks. Default 2.5 s. */
  everyMs?: number;
  /** A wait shorter than this is not worth a line. Default 5 s. */
  afterMs?: number;
  /** A wait still going is said again after this long. Default 30 s. */
  repeatMs?: number;
}

interface Waiting {
  pid: number;
  waited_ms: number;
  blockers: { pid: number; user: string | null; application: string | null }[] | null;
}

export function watchLockWaits(
  pool: pg.Pool,
  url: string,
  logger: Logger,
  options: LockWatchOptions = {},
): LockWatch {
  const everyMs = options.everyMs ?? 2_500;
  const afterMs = options.afterMs ?? 5_000;
  const repeatMs = options.repeatMs ?? 30_000;
  const backends = new Set<number>();
  const track = (client: pg.PoolClient) => {
    const pid = (client as pg.PoolClient & { processID?: number }).processID;
    if (pid !== undefined) backends.add(pid);
  };
  const untrack = (client: pg.PoolClient) => {
    const pid = (client as pg.PoolClient & { processID?: number }).processID;
    if (pid !== undefined) backends.delete(pid);
  };
  pool.on('acquire', track);
  pool.on('remove', untrack);
  /** When each backend's current wait was last said, by wait start. */
  const said = new Map<string, number>();
  let watcher: pg.Client | undefined;
  let checking = false;
  const check = async () => {
    if (checking || backends.size === 0 || pool.idleCount === pool.totalCount) return;
    checking = true;
    try {
      if (watcher === undefined) {
        watcher = new pg.Client({
          connectionString: url,
          connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
          application_name: 'insights-sync lock watch',
        });
        watcher.on('error', () => {});
        await watcher.connect();
      }
      const { rows } = await watcher.query<Waiting & { since: string }>(WAITING, [[...backends], afterMs]);
      const now = Date.now();
      for (const row of rows) {
        const key = `${row.pid} ${row.since}`;
        const last = said.get(key);
        if (last !== undefined && now - last < repeatMs) continue;
        said.set(key, now);
        logger.warn(
          { pid: row.pid, waitedSeconds: Math.round(row.waited_ms / 1000), holders: row.blockers ?? [] },
          'a statement of this command waits on a lock held by another session',
        );
      }
    } catch {
      // A watch that cannot look says nothing: the command's own statements report their errors.
    } finally {
      checking = false;
    }
  };
  const timer = setInterval(() => void check(), everyMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      pool.off('acquire', track);
      pool.off('remove', untrack);
      await watcher?.end().catch(() => {});
    },
  };
}

/** The pool's backends waiting on a lock for at least $2 ms, with the sessions they wait for. */
const WAITING = `
  select l.pid, min(l.waitstart)::text as since,
         (extract(epoch from now() - min(l.waitstart)) * 1000)::float8 as waited_ms,
         (select json_agg(json_build_object('pid', a.pid, 'user', a.usename, 'application', a.application_name))
            from pg_catalog.pg_stat_activity a where a.pid = any(pg_catalog.pg_blocking_pids(l.pid))) as blockers
    from pg_catalog.pg_locks l
   where not l.granted and l.pid = any($1::int[]) and l.waitstart is not null
   group by l.pid
  having now() - min(l.waitstart) >= make_interval(secs => $2::float8 / 1000)`;
