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
