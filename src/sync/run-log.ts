import { type Kysely, sql } from 'kysely';
import type { Database } from '../db/database.js';
import type { RunStatus, RunTrigger } from '../db/tables/bookkeeping.js';

/** Opens the run's row in the run log; every run, whatever its end, is recorded. */
export async function startRun(
  db: Kysely<Database>,
  trigger: RunTrigger,
  range: { from: string | null; to: string | null },
): Promise<number> {
  const row = await db
    .insertInto('sync_runs')
    .values({ trigger, status: 'running', from_day: range.from, to_day: range.to })
    .returning('run_id')
    .executeTakeFirstOrThrow();
  return row.run_id;
}

export async function finishRun(
  db: Kysely<Database>,
  runId: number,
  outcome: { status: Exclude<RunStatus, 'running'>; summary: unknown; error: string | null },
): Promise<void> {
  await db
    .updateTable('sync_runs')
    .set({
      status: outcome.status,
      finished_at: sql<Date>`now()`,
      summary: JSON.stringify(outcome.summary),
      error: outcome.error,
    })
    .where('run_id', '=', runId)
    .execute();
}

/** How often a queued run's planner, waiting without the run lock, says it is alive. */
export const RUN_HEARTBEAT_MS = 5_000;
/** Six heartbeats missed: the planner is gone. */
const RUN_ALIVE_SECONDS = 30;

/** Of a sync_runs row: its planner beat within RUN_ALIVE_SECONDS (a queued run waiting for its jobs). */
export const runBeating = sql<boolean>`coalesce(heartbeat_at >= now() - make_interval(secs => ${RUN_ALIVE_SECONDS}), false)`;

/**
 * Ends as interrupted every run still marked running whose process is gone. Only for a caller
 * holding the warehouse lock (src/db/run-lock.ts): then the only runs in progress are queued runs
 * waiting for their jobs without it, and those keep a fresh heartbeat. Returns the ids ended.
 */
export async function interruptAbandonedRuns(db: Kysely<Database>, error: string): Promise<number[]> {
  const rows = await db
    .updateTable('sync_runs')
    .set({ status: 'interrupted', finished_at: sql<Date>`now()`, error })
    .where('status', '=', 'running')
    .where((eb) =>
      eb.or([
        eb('heartbeat_at', 'is', null),
        eb('heartbeat_at', '<', sql<Date>`now() - make_interval(secs => ${RUN_ALIVE_SECONDS})`),
      ]),
    )
    .returning('run_id')
    .execute();
  return rows.map((r) => r.run_id);
}

/** Ends one run as interrupted, if it is still running (a forced exit of its own process). */
export async function interruptRun(
  db: Kysely<Database>,
  runId: number,
  error: string,
  summary: unknown,
): Promise<void> {
  await db
    .updateTable('sync_runs')
    .set({ status: 'interrupted', finished_at: sql<Date>`now()`, error, summary: JSON.stringify(summary) })
    .where('run_id', '=', runId)
    .where('status', '=', 'running')
    .execute();
}

/** A queued run's planner is alive (see interruptAbandonedRuns). */
export async function beatRun(db: Kysely<Database>, runId: number): Promise<void> {
  await db
    .updateTable('sync_runs')
    .set({ heartbeat_at: sql<Date>`now()` })
    .where('run_id', '=', runId)
    .execute();
}
