import { type Kysely, sql } from 'kysely';
import type { Database } from '../db/database.js';
import { queueInUse, type WindowJobCounts, windowJobCounts } from '../queue/job-table.js';
import { ALIVE_MS } from '../queue/workers.js';

/** The queue as `status` shows it; null when the warehouse has never used the queue. */
export interface QueueStatus {
  /** Workers whose heartbeat is recent. */
  workersAlive: number;
  /** Workers alive, and those seen within the last hour (stopped or gone). */
  workers: {
    workerId: string;
    host: string;
    pid: number;
    concurrency: number;
    alive: boolean;
    lastSeenAt: string;
    stoppedAt: string | null;
    windowsDone: number;
    windowsFailed: number;
  }[];
  /** Window jobs per source, by state, as pg-boss holds them (completed ones until it deletes them, 7 days after). */
  sources: SourceQueueStatus[];
  /** All sources together. */
  perMinute: number;
}

/** One source's window jobs by state (WindowJobCounts), with its throughput instead of the recent count. */
export type SourceQueueStatus = Omit<WindowJobCounts, 'recent'> & {
  /** Window jobs completed per minute, over the last THROUGHPUT_MINUTES. */
  perMinute: number;
};

const THROUGHPUT_MINUTES = 5;

/**
 * `migrate` installs pg-boss in every warehouse: the queue shows once a run has created a
 * source's queue. Callers check first that its objects are the owner's (src/db/trusted-owners.ts).
 */
export async function queueStatus(db: Kysely<Database>, schema: string): Promise<QueueStatus | null> {
  if (!(await queueInUse(db, schema))) return null;
  const workerRows = await db
    .selectFrom('queue_workers')
    .selectAll()
    .select(
      sql<boolean>`stopped_at is null and last_seen_at > now() - make_interval(secs => ${ALIVE_MS / 1000})`.as(
        'alive',
      ),
    )
    .where('last_seen_at', '>', sql<Date>`now() - interval '1 hour'`)
    .orderBy('started_at')
    .execute();
  const sources = (await windowJobCounts(db, schema, THROUGHPUT_MINUTES)).map(({ recent, ...counts }) => ({
    ...counts,
    perMinute: recent / THROUGHPUT_MINUTES,
  }));
  return {
    workersAlive: workerRows.filter((w) => w.alive).length,
    workers: workerRows.map((w) => ({
      workerId: w.worker_id,
      host: w.host,
      pid: w.pid,
      concurrency: w.concurrency,
      alive: w.alive,
      lastSeenAt: w.last_seen_at.toISOString(),
      stoppedAt: w.stopped_at?.toISOString() ?? null,
      windowsDone: w.windows_done,
      windowsFailed: w.windows_failed,
    })),
    sources,
    perMinute: sources.reduce((sum, s) => sum + s.perMinute, 0),
  };
}
