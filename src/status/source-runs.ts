import { type Kysely, sql } from 'kysely';
import type { Database } from '../db/database.js';
import type { ResourceSummary } from '../sync/outcomes.js';

/**
 * How a source fared in the last run that asked it. The ledger alone does not say: a key revoked
 * after the source loaded fails every window of the next run before any of them is written
 * (nothing in the ledger turns failed), and a run of another source later ends ok. The run's
 * summary, per source and resource, does say.
 */
export interface SourceRun {
  runId: number;
  trigger: string;
  finishedAt: string | null;
  /**
   * ok: nothing failed; partial: some of its resources or windows failed, others loaded; failed:
   * nothing of it loaded; interrupted: nothing failed, some windows were not run (shutdown).
   */
  outcome: 'ok' | 'partial' | 'failed' | 'interrupted';
  /** Its day windows in that run. */
  windows: number;
  /** Its windows and snapshot resources that failed (those a failure kept from running are not run). */
  failed: number;
  /** The first error that run recorded for it; null when nothing failed. */
  error: string | null;
}

/** The counts of one source in a run's summary, as stored (older runs may lack a count). */
export type SourceSummary = Record<string, Partial<ResourceSummary> | undefined>;

/** A source's outcome in one run, from its part of the run's summary. Pure. */
export function sourceRunOutcome(
  resources: SourceSummary,
): Pick<SourceRun, 'outcome' | 'windows' | 'failed' | 'error'> {
  let windows = 0;
  let failed = 0;
  let skipped = 0;
  let loadedAny = false;
  let error: string | null = null;
  for (const r of Object.values(resources)) {
    if (r === undefined) continue;
    const own = { windows: r.windows ?? 0, failed: r.failedWindows ?? 0, skipped: r.skippedWindows ?? 0 };
    windows += own.windows;
    failed += own.failed;
    skipped += own.skipped;
    // A snapshot resource counts no windows: it loaded when it neither failed nor was skipped.
    if (own.windows > 0 ? own.windows > own.failed + own.skipped : own.failed + own.skipped === 0)
      loadedAny = true;
    error ??= r.errors?.find((e) => typeof e === 'string') ?? null;
  }
  const outcome = failed > 0 ? (loadedAny ? 'partial' : 'failed') : skipped > 0 ? 'interrupted' : 'ok';
  return { outcome, windows, failed, error: failed > 0 ? (error ?? 'unknown error') : null };
}

/** Per source, the last finished run whose summary has it; sources no run has asked are absent. */
export async function lastSourceRuns(
  db: Kysely<Database>,
  sources: readonly string[],
): Promise<Map<string, SourceRun>> {
  if (sources.length === 0) return new Map();
  const { rows } = await sql<{
    source: string;
    run_id: number;
    trigger: string;
    finished_at: Date | null;
    resources: SourceSummary;
  }>`
    select distinct on (s.key) s.key as source, r.run_id, r.trigger, r.finished_at, s.value as resources
    from ${sql.table('sync_runs')} r cross join lateral jsonb_each(r.summary) s
    where r.status <> 'running' and jsonb_typeof(r.summary) = 'object' and s.key = any(${[...sources]}::text[])
    order by s.key, r.run_id desc`.execute(db);
  return new Map(
    rows.map((row) => [
      row.source,
      {
        runId: row.run_id,
        trigger: row.trigger,
        finishedAt: row.finished_at?.toISOString() ?? null,
        ...sourceRunOutcome(row.resources ?? {}),
      },
    ]),
  );
}
