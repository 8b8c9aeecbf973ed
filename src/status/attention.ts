import type { SourceRun } from './source-runs.js';

/**
 * What `status` says needs attention, and what to do about it: one entry per reason. `status` is
 * healthy exactly when this list is empty, so a monitor that sees exit 1 also sees why.
 */

/** A windowed resource whose lag (days behind yesterday) is above this needs attention. */
export const MAX_LAG_DAYS = 2;

export interface Attention {
  /** The source it is about; absent for a run. */
  source?: string;
  resource?: string;
  /** The run it is about. */
  runId?: number;
  reason: string;
  /** The next step, a command where there is one. */
  next: string;
}

/** A source as status sees it: in the configuration, in the warehouse, or both. */
export interface SourceState {
  source: string;
  /** In the configuration; null when the configuration names no source (status alone needs none). */
  configured: boolean | null;
  /** Has a row in the warehouse's sources table (something of it was ever written). */
  inWarehouse: boolean;
  state: 'ok' | 'needs attention' | 'never loaded' | 'not configured';
  /** How it fared in the last run that asked it; null when no run has. */
  lastRun: SourceRun | null;
  /** The first error of that run for it; null when nothing of it failed there (or no run asked it). */
  lastError: string | null;
}

export interface AttentionInput {
  sources: readonly Omit<SourceState, 'state'>[];
  resources: readonly {
    source: string;
    resource: string;
    watermark: string | null;
    lagDays: number | null;
    failedWindows: readonly { day: string; error: string | null }[];
  }[];
  /** Newest first, as status shows them; `orphaned`: marked running, its process gone. */
  runs: readonly {
    runId: number;
    trigger: string;
    status: string;
    error: string | null;
    orphaned: boolean;
  }[];
}

/** Every reason status is not healthy; empty when it is. Pure: tested without a database. */
export function attentionReasons(input: AttentionInput): Attention[] {
  const out: Attention[] = [];
  const watched = (source: string) => input.sources.find((s) => s.source === source)?.configured !== false;
  for (const s of input.sources) {
    if (s.configured !== true || s.inWarehouse) continue;
    out.push({
      source: s.source,
      reason: `${s.source}: configured, never loaded${s.lastError === null ? ' (no run has tried it yet)' : `; last error: ${s.lastError}`}`,
      next:
        s.lastError === null
          ? `run \`insights-sync sync --source ${s.source}\``
          : `fix its key or URL (\`insights-sync check\` tests each source), then \`insights-sync sync --source ${s.source}\``,
    });
  }
  out.push(...lastRunReasons(input.sources));
  for (const r of input.resources) {
    if (!watched(r.source)) continue;
    const last = r.failedWindows.at(-1);
    if (last !== undefined)
      out.push({
        source: r.source,
        resource: r.resource,
        reason: `${r.source}/${r.resource}: ${r.failedWindows.length} failed window(s), last ${last.day}: ${last.error ?? 'unknown error'}`,
        next: `the next \`insights-sync sync\` retries the days of its lookback; older ones: \`insights-sync backfill --source ${r.source} --resources ${r.resource} --from ${r.failedWindows[0]?.day ?? last.day} --to ${last.day}\``,
      });
    if (r.lagDays !== null && r.lagDays > MAX_LAG_DAYS)
      out.push({
        source: r.source,
        resource: r.resource,
        reason: `${r.source}/${r.resource}: ${r.lagDays} days behind yesterday (watermark ${r.watermark ?? 'none'}; more than ${MAX_LAG_DAYS} needs attention)`,
        next: 'is the nightly run (`insights-sync schedule`, cron or timer) running? `insights-sync sync` catches up',
      });
  }
  out.push(...runReasons(input.runs));
  return out;
}

/**
 * A loaded source that failed in the last run that asked it: a key revoked since it loaded fails
 * every window before any is written, so no failed window and no lag says so yet, and the next
 * run of another source ends ok.
 */
function lastRunReasons(sources: AttentionInput['sources']): Attention[] {
  return sources.flatMap((s) => {
    const run = s.lastRun;
    if (s.configured === false || !s.inWarehouse || run === null) return [];
    if (run.outcome !== 'failed' && run.outcome !== 'partial') return [];
    return [
      {
        source: s.source,
        runId: run.runId,
        reason: `${s.source}: ${run.outcome === 'failed' ? 'nothing loaded' : 'not everything loaded'} in its last run, ${run.runId} (${run.trigger}): ${run.failed} failed; ${run.error ?? 'unknown error'}`,
        next: `fix what the error names (\`insights-sync check\` tests the key and each endpoint), then \`insights-sync sync --source ${s.source}\``,
      },
    ];
  });
}

function runReasons(runs: AttentionInput['runs']): Attention[] {
  const out: Attention[] = [];
  for (const run of runs.filter((r) => r.orphaned))
    out.push({
      runId: run.runId,
      reason: `run ${run.runId} (${run.trigger}) is marked running but its process is gone (it holds no run lock and sends no heartbeat)`,
      next: 'look in the system log for why it ended (killed, out of memory); the next `insights-sync sync` records it as interrupted and loads its days again',
    });
  const last = runs.find((r) => r.status !== 'running');
  if (last === undefined || last.status === 'ok' || last.orphaned) return out;
  out.push({
    runId: last.runId,
    reason: `the last run, ${last.runId} (${last.trigger}), ended ${last.status}${last.error === null ? '' : `: ${last.error}`}`,
    next:
      last.status === 'interrupted'
        ? 'the next `insights-sync sync` loads the days it did not finish'
        : 'fix what the error names (`insights-sync check` tests the key and each endpoint); the next run that ends ok clears this',
  });
  return out;
}

/** Each source's state, from the configuration and the warehouse. */
export function sourceStates(
  sources: readonly Omit<SourceState, 'state'>[],
  attention: readonly Attention[],
): SourceState[] {
  return sources.map((s) => ({
    ...s,
    state:
      s.configured === false
        ? 'not configured'
        : !s.inWarehouse
          ? 'never loaded'
          : attention.some((a) => a.source === s.source)
            ? 'needs attention'
            : 'ok',
  }));
}
