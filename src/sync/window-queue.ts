import { randomUUID } from 'node:crypto';
import pg from 'pg';
import PgBoss from 'pg-boss';
import type { Config } from '../config/config.js';
import { queueSchema } from '../db/bookkeeping.js';
import { CONNECT_TIMEOUT_MS } from '../db/connection.js';
import type { RunTrigger } from '../db/tables/bookkeeping.js';
import { CliError } from '../errors.js';
import type { Logger } from '../log/logger.js';
import type { WindowedResource } from '../schemas/resources.js';
import type { DayString } from '../time/days.js';

/**
 * The window queue: pg-boss in the warehouse database, one pg-boss queue per source. Glossary:
 * - job: one window (source, resource, day) of one run, sent by the run's planner (`sync --queue`,
 *   `backfill --queue`, `schedule` with INSIGHTS_SCHEDULE_QUEUE) and taken by a `worker`;
 * - slot: one of a source's rows in queue_slots, held by the worker running one of its windows
 *   (src/sync/source-slots.ts).
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
}

export function windowQueueName(source: string): string {
  return `windows.${source}`;
}

/**
 * Higher runs first. A sync's (or the schedule's) windows sit in a band above every backfill's,
 * oldest day first (its watermark advances as it goes); a backfill's run newest day first, so the
 * recent history an analyst asks about first is there first.
 */
export function windowPriority(trigger: RunTrigger, day: DayString): number {
  const dayNumber = Math.floor(Date.parse(`${day}T00:00:00Z`) / 86_400_000);
  return trigger === 'backfill' ? dayNumber : SYNC_BAND + (SYNC_BAND - 1 - dayNumber);
}
/** Above any day number until the year 4700; int4 holds twice it. */
const SYNC_BAND = 1_000_000;

/**
 * Opens pg-boss on the warehouse. It creates its schema on first use (migrate: true) and upgrades
 * it itself when pg-boss is upgraded: its tables are pg-boss's to version, so they are not in our
 * frozen migrations. `supervise` runs its maintenance (expiring jobs of dead workers, archiving)
 * every INSIGHTS_QUEUE_MAINTENANCE_SECONDS in whichever process gets there first.
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
  const boss = new PgBoss({
    connectionString: url,
    schema: name,
    application_name: 'insights-sync queue',
    max: 4,
    migrate: true,
    supervise: true,
    schedule: false,
    maintenanceIntervalSeconds: settings.queueMaintenanceSeconds,
    monitorStateIntervalSeconds: settings.queueMaintenanceSeconds,
    expireInSeconds: settings.queueExpireSeconds,
    retryLimit: settings.queueRetryLimit,
  });
  boss.on('error', (error) => logger.warn({ err: error.message }, 'queue error'));
  await installIntoGivenSchema(url, name);
  await boss.start();
  return boss;
}

/**
 * pg-boss installs its tables after a CREATE SCHEMA IF NOT EXISTS, which PostgreSQL refuses to a
 * role without CREATE on the database even when the schema is there. docs/roles.sql creates the
 * queue's schema for the sync role (which must own it: pg-boss adds a table per queue at run time),
 * so when the schema exists and pg-boss is not installed in it, its own construction plan runs
 * here without that one statement. Otherwise pg-boss installs or upgrades itself in start().
 */
async function installIntoGivenSchema(url: string, name: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
  client.on('error', () => {});
  await client.connect();
  try {
    const { rows } = await client.query<{ schema: boolean; installed: boolean }>(
      `select exists (select 1 from pg_namespace where nspname = $1) as schema,
              to_regclass($2) is not null as installed`,
      [name, `${client.escapeIdentifier(name)}.version`],
    );
    if (rows[0]?.schema !== true || rows[0]?.installed === true) return;
    const plan = PgBoss.getConstructionPlans(name);
    const withoutSchema = plan.replace(CREATE_SCHEMA, '');
    if (withoutSchema === plan)
      throw new Error(`pg-boss's construction plan has no ${CREATE_SCHEMA} statement`);
    try {
      await client.query(withoutSchema);
    } catch (error) {
      // Another process installed it first (the plan holds pg-boss's advisory lock): done.
      const code = (error as { code?: unknown }).code;
      if (code !== DUPLICATE_OBJECT && code !== DUPLICATE_TABLE) throw error;
    }
  } finally {
    await client.end().catch(() => {});
  }
}

const CREATE_SCHEMA = /CREATE SCHEMA IF NOT EXISTS [^;]+;/;
const DUPLICATE_OBJECT = '42710';
const DUPLICATE_TABLE = '42P07';

/** A source's queue, created once (pg-boss ignores a second create). */
export async function ensureWindowQueue(
  boss: PgBoss,
  source: string,
  settings: QueueSettings,
): Promise<void> {
  await boss.createQueue(windowQueueName(source), {
    name: windowQueueName(source),
    policy: 'standard',
    retryLimit: settings.queueRetryLimit,
    retryDelay: 0,
    expireInSeconds: settings.queueExpireSeconds,
  });
}

/** Sends a run's windows as jobs; returns their ids in the order given. */
export async function sendWindowJobs(
  boss: PgBoss,
  trigger: RunTrigger,
  jobs: readonly WindowJob[],
  settings: QueueSettings,
): Promise<string[]> {
  const ids = jobs.map(() => randomUUID());
  const inserts = jobs.map((job, index) => ({
    id: ids[index],
    name: windowQueueName(job.source),
    data: job,
    priority: windowPriority(trigger, job.day),
    retryLimit: settings.queueRetryLimit,
    retryDelay: 0,
    expireInSeconds: settings.queueExpireSeconds,
  }));
  // One statement per thousand jobs: a year's backfill of many sources stays a few round trips.
  for (let i = 0; i < inserts.length; i += 1000) await boss.insert(inserts.slice(i, i + 1000));
  return ids;
}
