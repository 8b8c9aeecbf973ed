import { randomUUID } from 'node:crypto';
import { type JobInsert, PgBoss } from 'pg-boss';
import type { Config } from '../config/config.js';
import { bookkeepingSchema, queueSchema } from '../db/bookkeeping.js';
import type { RunTrigger } from '../db/tables/bookkeeping.js';
import { CliError, errorMessage } from '../errors.js';
import type { Logger } from '../log/logger.js';
import type { WindowedResource } from '../schemas/resources.js';
import type { DayString } from '../time/days.js';
import { WINDOW_QUEUE_PREFIX } from './job-table.js';
import { type QueueDb, queueDb } from './queue-db.js';

/**
 * The window queue: pg-boss in the warehouse database, one pg-boss queue per source. Glossary:
 * - job: one window (source, resource, day) of one run, sent by the run's planner (`sync --queue`,
 *   `backfill --queue`, `schedule` with INSIGHTS_SCHEDULE_QUEUE) and taken by a `worker`;
 * - slot: one of a source's rows in queue_slots, held by the worker running one of its windows
 *   (src/queue/source-slots.ts).
 * The ledger (sync_windows) stays the truth of what is done; a job only says who does what next.
 */

export type QueueSettings = Pick<
  Config,
  'sourceConcurrency' | 'queueExpireSeconds' | 'queueMaintenanceSeconds' | 'queueRetryLimit'
>;

/** A job's data: everything a worker needs besides its own configuration of the source. */
export interface WindowJob {
  runId: number;
  source: string;
  resource: WindowedResource;
  day: DayString;
  startDay: DayString;
  today: DayString;
  /** An earlier run settled the day empty (src/ledger/plan-days.ts, daysBefore); absent: not known so. */
  emptyBefore?: boolean;
  /** Items earlier runs stored of the day (PlannedWindow); absent: none known. */
  itemsBefore?: number;
  /**
   * The newest migration the planner knew (src/db/migrator.ts LATEST_MIGRATION): a worker that
   * knows an older one refuses the job (jobTooNew). Absent in jobs of versions before it was added.
   */
  schema?: string;
}

/**
 * Why a worker that knows migrations up to `latest` must not run `job`, or undefined when it may:
 * a newer planner sent it, for a warehouse migrated past this worker, whose tables it may
 * misread or miswrite.
 */
export function jobTooNew(job: Pick<WindowJob, 'schema'>, latest: string): string | undefined {
  if (job.schema === undefined || job.schema <= latest) return undefined;
  return `a window job was planned by an insights-sync that knows migration ${job.schema}, and this worker knows migrations up to ${latest}: upgrade insights-sync on this worker's host; the job is handed back for a newer worker`;
}

export function windowQueueName(source: string): string {
  return `${WINDOW_QUEUE_PREFIX}${source}`;
}

/**
 * Higher runs first. A sync's (or the schedule's) windows sit in a band above every backfill's,
 * oldest day first (its watermark advances as it goes); a backfill's run newest day first, so the
 * recent history an analyst asks about first is there first.
 */
export function windowPriority(trigger: RunTrigger, day: DayString): number {
  const dayNumber = Math.floor(Date.parse(`${day}T00:00:00Z`) / 86_400_000);
  // A verify re-reads settled days: it waits behind every sync, as a backfill does.
  return trigger === 'backfill' || trigger === 'verify' ? dayNumber : SYNC_BAND + (SYNC_BAND - 1 - dayNumber);
}
/** Above any day number until the year 4700; int4 holds twice it. */
const SYNC_BAND = 1_000_000;

/**
 * Opens pg-boss on the warehouse. Its tables are pg-boss's to version, so they are not in our
 * frozen migrations: `migrate` installs and upgrades them, as the owner (src/db/queue-schema.ts),
 * and this only checks they are there, at pg-boss's version (a runtime role owns nothing in the
 * queue's schema, so it could not install them). `supervise` runs pg-boss's maintenance (expiring
 * jobs of dead workers, deleting old ones) every INSIGHTS_QUEUE_MAINTENANCE_SECONDS in whichever process
 * gets there first.
 */
export async function openQueue(
  url: string,
  schema: string,
  settings: QueueSettings,
  logger: Logger,
): Promise<PgBoss> {
  const name = queueSchema(schema);
  // pg-boss refuses longer schema names.
  if (name.length > 50)
    throw new CliError(
      `INSIGHTS_SCHEMA ${schema} is too long for the queue: its schema ${name} must have at most 50 characters`,
    );
  const db = queueDb({ url, max: 4, applicationName: 'insights-sync queue' }, (error) =>
    logger.warn({ err: error.message }, 'queue error'),
  );
  const boss = new QueueBoss(db, {
    db,
    schema: name,
    migrate: false,
    createSchema: false,
    supervise: true,
    schedule: false,
    superviseIntervalSeconds: settings.queueMaintenanceSeconds,
    maintenanceIntervalSeconds: settings.queueMaintenanceSeconds,
    monitorIntervalSeconds: settings.queueMaintenanceSeconds,
    // What would create or rebuild tables at run time (the daily partitions of the queue
    // statistics, index rebuilds) is off: a runtime role owns nothing in the queue schema. The
    // instance registry is off too: queue_workers is the workers' heartbeat here.
    persistQueueStats: false,
    persistWarnings: false,
    reindex: false,
    registerInstance: false,
  });
  boss.on('error', (error) => logger.warn({ err: error.message }, 'queue error'));
  try {
    await boss.start();
  } catch (error) {
    await boss.stop({ graceful: false }).catch(() => {});
    // pg-boss's own words for a schema it is not installed in, or one at another version.
    if (/not installed|requires migrations/.test(errorMessage(error)))
      throw new CliError(
        `the window queue's tables in schema ${name} are missing or of another pg-boss version: run insights-sync migrate as the schema owner`,
        {},
        { cause: error },
      );
    throw error;
  }
  return boss;
}

/** pg-boss on connections of ours (queue-db.ts): closed with it. */
class QueueBoss extends PgBoss {
  constructor(
    private readonly connections: QueueDb,
    options: ConstructorParameters<typeof PgBoss>[0],
  ) {
    super(options);
  }

  override async stop(options?: Parameters<PgBoss['stop']>[0]): Promise<void> {
    try {
      await super.stop(options);
    } finally {
      await this.connections.close();
    }
  }
}

/** A source's queue, created once (pg-boss ignores a second create). */
export async function ensureWindowQueue(
  boss: PgBoss,
  schema: string,
  source: string,
  settings: QueueSettings,
): Promise<void> {
  // Through the owner's function (migration 0020), not pg-boss's createQueue: a queue is a table
  // of the queue schema, which no runtime role may create in.
  await boss.getDb().executeSql(`select "${bookkeepingSchema(schema)}".create_window_queue($1, $2)`, [
    windowQueueName(source),
    {
      policy: 'standard',
      retryLimit: settings.queueRetryLimit,
      retryDelay: 0,
      expireInSeconds: settings.queueExpireSeconds,
    },
  ]);
}

/** Sends a run's windows as jobs; returns their ids in the order given. */
export async function sendWindowJobs(
  boss: PgBoss,
  trigger: RunTrigger,
  jobs: readonly WindowJob[],
  settings: QueueSettings,
): Promise<string[]> {
  const ids = jobs.map(() => randomUUID());
  // pg-boss inserts into one queue per call: the jobs by source, each source's in the order given.
  const bySource = new Map<string, JobInsert<WindowJob>[]>();
  jobs.forEach((job, index) => {
    const inserts = bySource.get(job.source) ?? [];
    inserts.push({
      id: ids[index],
      data: job,
      priority: windowPriority(trigger, job.day),
      retryLimit: settings.queueRetryLimit,
      retryDelay: 0,
      expireInSeconds: settings.queueExpireSeconds,
    });
    bySource.set(job.source, inserts);
  });
  // One statement per thousand jobs: a year's backfill of many sources stays a few round trips.
  for (const [source, inserts] of bySource)
    for (let i = 0; i < inserts.length; i += 1000)
      await boss.insert(windowQueueName(source), inserts.slice(i, i + 1000));
  return ids;
}
