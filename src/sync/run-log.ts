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

/**
 * Ends every run still marked running as interrupted. Only for a caller holding the warehouse
 * lock (src/db/run-lock.ts): then no other run can be in progress, and a row left running is one
 * whose process was killed, or the caller's own run in a forced exit. Returns their ids.
 */
export async function interruptRunningRuns(
  db: Kysely<Database>,
  error: string,
  summary?: unknown,
): Promise<number[]> {
  const rows = await db
    .updateTable('sync_runs')
    .set({
      status: 'interrupted',
      finished_at: sql<Date>`now()`,
      error,
      summary: summary === undefined ? undefined : JSON.stringify(summary),
    })
    .where('status', '=', 'running')
    .returning('run_id')
    .execute();
  return rows.map((r) => r.run_id);
}
