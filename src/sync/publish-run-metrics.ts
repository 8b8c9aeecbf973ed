import { type Kysely, sql } from 'kysely';
import type { Database } from '../db/database.js';
import { verifyProgress } from '../ledger/read.js';
import { VERIFY_PERIOD_DAYS } from '../ledger/read-period.js';
import type { Logger } from '../log/logger.js';
import { writeTextfileAtomically } from '../metrics/textfile.js';
import type { RunResult } from './outcomes.js';
import { recordRun, runMetricsText } from './run-metrics.js';

/**
 * After a run is recorded, when INSIGHTS_METRICS_FILE or INSIGHTS_METRICS_PORT is set: its
 * metrics into the process registry (what `schedule` serves on /metrics with the port) and, with
 * the file, into that file for node_exporter's textfile collector. The times come from the run
 * log, so the last success survives failed runs and restarts. A file that cannot be written is
 * logged and returned, not thrown: the run's data is loaded (and recorded) either way; `sync` and
 * `backfill` end with the write-failure code, `schedule` goes on, and the stale file shows
 * (node_textfile_mtime_seconds, and the last success time in it).
 *
 * The verifies' gauges (verify-metrics.ts) are read from the ledger with them, over the
 * VERIFY_PERIOD_DAYS before the run's end (the database's clock, which stamps last_verified_at). A
 * verify records its findings after its runs end: it calls this again then, with its last run.
 */
export async function publishRunMetrics(
  db: Kysely<Database>,
  result: Omit<RunResult, 'error'>,
  metricsFile: string | undefined,
  logger: Logger,
): Promise<{ metricsFileError?: unknown }> {
  const times = await sql<{ finished_at: Date | null; last_success: Date | null }>`
    select (select finished_at from sync_runs where run_id = ${result.runId}) as finished_at,
           (select max(finished_at) from sync_runs where status = 'ok') as last_success`.execute(db);
  const row = times.rows[0];
  const finishedAt = row?.finished_at ?? new Date();
  const since = new Date(finishedAt.getTime() - VERIFY_PERIOD_DAYS * 86_400_000);
  const input = {
    result,
    finishedAt,
    lastSuccessAt: row?.last_success ?? null,
    verify: await verifyProgress(db, since, { everySource: true }),
  };
  recordRun(input);
  if (metricsFile === undefined) return {};
  try {
    await writeTextfileAtomically(metricsFile, await runMetricsText(input));
    return {};
  } catch (error) {
    logger.error({ file: metricsFile, err: (error as Error).message }, 'could not write the metrics file');
    return { metricsFileError: error };
  }
}
