import { type Kysely, sql } from 'kysely';
import { queueSchema } from '../db/bookkeeping.js';
import type { Database } from '../db/database.js';

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
  /** Window jobs per source, by state, as pg-boss holds them (completed ones until it archives them). */
  sources: {
    source: string;
    queued: number;
    running: number;
    completed: number;
    failed: number;
    cancelled: number;
    /** Jobs taken again after their worker died or threw (pg-boss retry_count > 0). */
    retried: number;
    /** Window jobs completed per minute, over the last THROUGHPUT_MINUTES. */
    perMinute: number;
  }[];
  /** All sources together. */
  perMinute: number;
}

/** How often a worker writes its heartbeat row. */
export const HEARTBEAT_MS = 5_000;

/** Three heartbeats missed: the worker is taken as dead. */
export const ALIVE_MS = 3 * HEARTBEAT_MS;
const THROUGHPUT_MINUTES = 5;

/**
 * `migrate` installs pg-boss in every warehouse: the queue shows once a run has created a
 * source's queue. Callers check first that its objects are the owner's (src/db/trusted-owners.ts).
 */
export async function queueStatus(db: Kysely<Database>, schema: string): Promise<QueueStatus | null> {
  const queueJobs = `"${queueSchema(schema)}".job`;
  const queues = `"${queueSchema(schema)}".queue`;
  const installed = await sql<{
    found: boolean;
  }>`select to_regclass(${queueJobs}) is not null and to_regclass(${queues}) is not null as found`.execute(
    db,
  );
  if (installed.rows[0]?.found !== true) return null;
  const used = await sql<{
    found: boolean;
  }>`select exists (select 1 from ${sql.raw(queues)}) as found`.execute(db);
  if (used.rows[0]?.found !== true) return null;
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
  const jobs = await sql<{
    name: string;
    queued: number;
    running: number;
    completed: number;
    failed: number;
    cancelled: number;
    retried: number;
    recent: number;
  }>`select name,
        count(*) filter (where state in ('created', 'retry'))::int as queued,
        count(*) filter (where state = 'active')::int as running,
        count(*) filter (where state = 'completed')::int as completed,
        count(*) filter (where state = 'failed')::int as failed,
        count(*) filter (where state = 'cancelled')::int as cancelled,
        count(*) filter (where retry_count > 0)::int as retried,
        count(*) filter (where state = 'completed'
                           and completed_on > now() - make_interval(mins => ${THROUGHPUT_MINUTES}))::int as recent
      from ${sql.raw(queueJobs)}
     where name like 'windows.%'
     group by name order by name`.execute(db);
  const sources = jobs.rows.map((r) => ({
    source: r.name.slice('windows.'.length),
    queued: r.queued,
    running: r.running,
    completed: r.completed,
    failed: r.failed,
    cancelled: r.cancelled,
    retried: r.retried,
    perMinute: r.recent / THROUGHPUT_MINUTES,
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
