import type { PgBoss } from 'pg-boss';
import { bookkeepingSchema } from '../db/bookkeeping.js';

/** How often a worker writes its heartbeat row (queue_workers). */
export const HEARTBEAT_MS = 5_000;

/** Three heartbeats missed: the worker is taken as dead. */
export const ALIVE_MS = 3 * HEARTBEAT_MS;

/** Workers whose heartbeat is recent (ALIVE_MS) and that have not stopped. */
export async function liveWorkers(boss: PgBoss, schema: string): Promise<number> {
  const { rows } = await boss.getDb().executeSql(
    `select count(*)::int as alive from "${bookkeepingSchema(schema)}".queue_workers
      where stopped_at is null and last_seen_at > now() - make_interval(secs => $1)`,
    [ALIVE_MS / 1000],
  );
  return (rows[0] as { alive?: number } | undefined)?.alive ?? 0;
}
