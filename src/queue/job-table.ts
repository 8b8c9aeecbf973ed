import { type Kysely, sql } from 'kysely';
import type { PgBoss } from 'pg-boss';
import { queueSchema } from '../db/bookkeeping.js';
import type { Database } from '../db/database.js';

/**
 * Every statement of ours against pg-boss's private tables (`<schema>_queue.job` and `.queue`):
 * pg-boss offers no call for these reads, so they are kept here, in one file, to be checked
 * against its new versions (src/db/queue-schema.ts installs them, and carries the waiting jobs of
 * pg-boss 10's tables over to pg-boss 12's). pg-boss's own calls (send,
 * fetch, complete, fail, cancel) go through its API.
 */

/** A source's window queue is named `windows.<source>` (window-queue.ts windowQueueName). */
export const WINDOW_QUEUE_PREFIX = 'windows.';

function jobTable(schema: string): string {
  return `"${queueSchema(schema)}".job`;
}

/** A job that has ended (completed, failed or cancelled). */
export interface EndedJob {
  id: string;
  state: string;
}

/**
 * The planner's look at its jobs: those of `ids` that have ended, or (cheaper, with `queues`)
 * those of the queues that ended since `since` by the database's clock, with a margin for a
 * completion that commits late. `seen` is the database's clock at the look, for the next `since`.
 */
export async function endedJobs(
  boss: PgBoss,
  schema: string,
  which: { ids: readonly string[] } | { queues: readonly string[]; since: Date },
): Promise<{ ended: EndedJob[]; seen: Date | undefined }> {
  const { rows } = await boss.getDb().executeSql(
    'ids' in which
      ? `select id::text, state, now() as seen from ${jobTable(schema)}
            where id = any($1::uuid[]) and state in ('completed', 'failed', 'cancelled')`
      : `select id::text, state, now() as seen from ${jobTable(schema)}
            where name = any($1::text[]) and state in ('completed', 'failed', 'cancelled')
              and completed_on > $2::timestamptz - interval '2 seconds'`,
    'ids' in which ? [[...which.ids]] : [[...which.queues], which.since],
  );
  const seen = (rows[0] as { seen?: Date } | undefined)?.seen;
  return { ended: rows as EndedJob[], seen };
}

/** The state and output of each job of `ids`. */
export async function jobOutputs(
  boss: PgBoss,
  schema: string,
  ids: readonly string[],
): Promise<{ id: string; state: string; output: unknown }[]> {
  const { rows } = await boss
    .getDb()
    .executeSql(`select id::text, state, output from ${jobTable(schema)} where id = any($1::uuid[])`, [
      [...ids],
    ]);
  return rows as { id: string; state: string; output: unknown }[];
}

/**
 * Of these sources, those whose window queue has jobs waiting to be taken, the one whose best job
 * ranks highest first (ties in a random order, so a worker's lanes spread over the sources).
 */
export async function sourcesWithWaitingJobs(
  boss: PgBoss,
  schema: string,
  sources: readonly string[],
): Promise<string[]> {
  const { rows } = await boss.getDb().executeSql(
    `select name, max(priority) as top from ${jobTable(schema)}
      where name = any($1::text[]) and state in ('created', 'retry') and start_after < now()
      group by name order by top desc, random()`,
    [sources.map((source) => `${WINDOW_QUEUE_PREFIX}${source}`)],
  );
  return (rows as { name: string }[]).map((r) => r.name.slice(WINDOW_QUEUE_PREFIX.length));
}

/** Whether pg-boss is installed in the warehouse's queue schema and a run has created a queue there. */
export async function queueInUse(db: Kysely<Database>, schema: string): Promise<boolean> {
  const queueJobs = jobTable(schema);
  const queues = `"${queueSchema(schema)}".queue`;
  const installed = await sql<{
    found: boolean;
  }>`select to_regclass(${queueJobs}) is not null and to_regclass(${queues}) is not null as found`.execute(
    db,
  );
  if (installed.rows[0]?.found !== true) return false;
  const used = await sql<{
    found: boolean;
  }>`select exists (select 1 from ${sql.raw(queues)}) as found`.execute(db);
  return used.rows[0]?.found === true;
}

/** One source's window jobs by state, as pg-boss holds them (completed ones until it deletes them, 7 days after). */
export interface WindowJobCounts {
  source: string;
  queued: number;
  running: number;
  completed: number;
  failed: number;
  cancelled: number;
  /** Jobs taken again after their worker died or threw (pg-boss retry_count > 0). */
  retried: number;
  /** Completed within the last `recentMinutes`. */
  recent: number;
}

/** Window jobs per source, by state; `recent`: completed within the last `recentMinutes`. */
export async function windowJobCounts(
  db: Kysely<Database>,
  schema: string,
  recentMinutes: number,
): Promise<WindowJobCounts[]> {
  const jobs = await sql<Omit<WindowJobCounts, 'source'> & { name: string }>`select name,
        count(*) filter (where state in ('created', 'retry'))::int as queued,
        count(*) filter (where state = 'active')::int as running,
        count(*) filter (where state = 'completed')::int as completed,
        count(*) filter (where state = 'failed')::int as failed,
        count(*) filter (where state = 'cancelled')::int as cancelled,
        count(*) filter (where retry_count > 0)::int as retried,
        count(*) filter (where state = 'completed'
                           and completed_on > now() - make_interval(mins => ${recentMinutes}))::int as recent
      from ${sql.raw(jobTable(schema))}
     where name like ${`${WINDOW_QUEUE_PREFIX}%`}
     group by name order by name`.execute(db);
  return jobs.rows.map(({ name, ...counts }) => ({
    source: name.slice(WINDOW_QUEUE_PREFIX.length),
    ...counts,
  }));
}
