import { sql } from 'kysely';
import type { PgBoss } from 'pg-boss';
import type { SourceConfig } from '../../src/config/source-config.js';
import { queueSchema } from '../../src/db/bookkeeping.js';
import { LATEST_MIGRATION } from '../../src/db/migrator.js';
import { type Logger, silentLogger } from '../../src/log/logger.js';
import { ensureSlots } from '../../src/queue/source-slots.js';
import {
  ensureWindowQueue,
  openQueue,
  type QueueSettings,
  type WindowJob,
} from '../../src/queue/window-queue.js';
import { runWorker, type WorkerResult } from '../../src/sync/window-worker.js';
import type { DayString } from '../../src/time/days.js';
import type { TestDatabase } from './database.js';
import { TEST_SETTINGS } from './sync-harness.js';

/**
 * The window queue of source `main` on a test database, and a worker taking its jobs in process:
 * what the tests of the queue and of the worker set up alike.
 */

/** Expiry and maintenance a minute apart: neither comes round while a test runs. */
export const TEST_QUEUE_SETTINGS: QueueSettings = {
  sourceConcurrency: 2,
  queueExpireSeconds: 60,
  queueMaintenanceSeconds: 60,
  queueRetryLimit: 3,
};

/**
 * pg-boss on `t`, with source main's queue created, and `slots` of its slots when given (as the
 * planner makes them before it sends, run-locked.ts). Stopped again if the queue cannot be made.
 */
export async function openMainQueue(
  t: TestDatabase,
  options: { settings?: QueueSettings; slots?: number } = {},
): Promise<PgBoss> {
  const settings = options.settings ?? TEST_QUEUE_SETTINGS;
  const boss = await openQueue(t.url, t.schema, settings, silentLogger());
  try {
    await ensureWindowQueue(boss, t.schema, 'main', settings);
    if (options.slots !== undefined) await ensureSlots(t.db, ['main'], options.slots);
  } catch (error) {
    await boss.stop({ graceful: false, timeout: 1000 });
    throw error;
  }
  return boss;
}

/** A worker on `t`'s pool taking `boss`'s jobs until `signal` is aborted; its idle lanes look again every 20 ms. */
export function startWorker(
  t: TestDatabase,
  boss: PgBoss,
  options: {
    sources: readonly SourceConfig[];
    workerConcurrency: number;
    signal: AbortSignal;
    logger?: Logger;
    heartbeatMs?: number;
  },
): Promise<WorkerResult> {
  return runWorker({
    pool: t.pool,
    db: t.db,
    url: t.url,
    schema: t.schema,
    boss,
    logger: options.logger ?? silentLogger(),
    sources: options.sources,
    settings: { ...TEST_SETTINGS, workerConcurrency: options.workerConcurrency },
    signal: options.signal,
    pollMs: 20,
    heartbeatMs: options.heartbeatMs,
  });
}

/**
 * A running sync, as its planner records it before it sends its windows: its id, and its window
 * job of source main's feedback for a day, as a planner of this version sends it.
 */
export async function startSyncRun(
  t: TestDatabase,
  days: { startDay: DayString; today: DayString },
): Promise<{ runId: number; job: (day: DayString) => WindowJob }> {
  const run = await sql<{ run_id: string }>`
    insert into sync_runs (trigger, status) values ('sync', 'running') returning run_id`.execute(t.db);
  const runId = Number(run.rows[0]?.run_id);
  const job = (day: DayString): WindowJob => ({
    runId,
    source: 'main',
    resource: 'feedback',
    day,
    startDay: days.startDay,
    today: days.today,
    schema: LATEST_MIGRATION,
  });
  return { runId, job };
}

/** A job's state in pg-boss's job table (created, active, retry, completed, ...). */
export async function jobState(t: TestDatabase, id: string | undefined): Promise<string | undefined> {
  const { rows } = await sql<{ state: string }>`
    select state::text as state from ${sql.id(queueSchema(t.schema), 'job')} where id = ${id}`.execute(t.db);
  return rows[0]?.state;
}
