import type { Kysely } from 'kysely';
import type { Database } from '../db/database.js';
import { type DayRead, doneDaysAmong } from '../ledger/read.js';
import {
  databaseNow,
  daysAbsentOnce,
  recordVerification,
  rowsFirstSeenSince,
  type VerifyFinding,
  windowKey,
} from '../ledger/verified.js';
import type { Logger } from '../log/logger.js';
import { WINDOWED_RESOURCES, type WindowedResource } from '../schemas/resource-names.js';
import { type DayString, daysFrom } from '../time/days.js';
import type { RunResult, WindowOutcome } from './outcomes.js';
import type { RequestAllowance } from './request-allowance.js';
import type { SyncRequest } from './run-sync.js';

/**
 * Verify: settled days read again with the sync's own engine (a run over a range, as a backfill
 * plans it: the same fetch, proofs, validation and window transaction), and what the reads
 * changed reported per day and resource. The findings are the load's own counts, not a second
 * comparison of the rows: what the window transaction inserted (the warehouse lacked it), updated
 * (it differed), marked missing upstream (no longer served) and moved (its dt changed).
 *
 * A whole read that finds a row absent only marks it absent (absent_since); as in a sync, a second
 * whole read confirms it (missing_upstream_since). A verify reads such days a second time at once,
 * in a confirming run of only those windows, so that what it reports as gone is marked gone.
 */
export interface VerifyRequest {
  from: DayString;
  to: DayString;
  sources?: readonly string[];
  /** Day-windowed resources only (snapshots have no days to verify). Default: all of them. */
  resources?: readonly WindowedResource[];
  /** Only these windows of the range (windowKey): the scrub's slice of a night. */
  only?: ReadonlySet<string>;
  /**
   * The scrub's hard stop, shared by the verify's runs (src/sync/request-allowance.ts): a window
   * it held back (not read, or read once and not confirmed) is not recorded verified, so that the
   * next night takes it first.
   */
  allowance?: RequestAllowance;
}

export interface DayVerdict extends VerifyFinding {
  /** The window's last outcome: done (verified), failed, skipped (not run), open. */
  status: WindowOutcome['status'];
  truncated: boolean;
  requests: number;
  /** The day was settled in the ledger before this verify read it (it was not a first read). */
  settledBefore: boolean;
  error?: string;
}

export interface VerifyResult {
  /** The verify's run, and its confirming run when a day held rows found absent once. */
  runs: RunResult[];
  days: DayVerdict[];
  /** Windows not verified because the allowance ran out (windowKey); none without one. */
  held: ReadonlySet<string>;
}

export interface VerifyDeps {
  db: Kysely<Database>;
  /**
   * One run of the sync engine: runLocked for the CLI and the schedule, runSync against the
   * simulator in tests. Calls onWindow with every window outcome, passes included.
   */
  run: (request: SyncRequest, onWindow: (outcome: WindowOutcome) => void) => Promise<RunResult>;
}

export async function runVerify(deps: VerifyDeps, request: VerifyRequest): Promise<VerifyResult> {
  const outcomes: WindowOutcome[] = [];
  const onWindow = (outcome: WindowOutcome) => outcomes.push(outcome);
  const base: SyncRequest = {
    trigger: 'verify',
    range: { from: request.from, to: request.to },
    resources: request.resources ?? WINDOWED_RESOURCES,
    ...(request.sources === undefined ? {} : { sources: request.sources }),
    ...(request.only === undefined ? {} : { only: request.only }),
    ...(request.allowance === undefined ? {} : { allowance: request.allowance }),
  };
  const planned = await plannedBefore(deps, request, base);
  const since = await databaseNow(deps.db);
  const runs = [await deps.run(base, onWindow)];
  const read = latestOutcomes(outcomes).filter((o) => o.status === 'done');
  const again = confirmable(await daysAbsentOnce(deps.db, read), request.allowance);
  if (again.length > 0 && !runs[0]?.windows.some((w) => w.fatal === true))
    runs.push(
      await deps.run(
        { ...base, only: new Set(again.map((d) => windowKey(d.source, d.resource, d.day))) },
        onWindow,
      ),
    );
  const settled = new Set(planned.map((d) => windowKey(d.source, d.resource, d.day)));
  const lacked = await rowsFirstSeenSince(deps.db, latestOutcomes(outcomes), since);
  const days = verdictsOf(outcomes, settled, lacked);
  const held = request.allowance?.held ?? new Set<string>();
  for (const day of days)
    if (day.status === 'done' && !held.has(windowKey(day.source, day.resource, day.day)))
      await recordVerification(deps.db, day);
  return { runs, days, held };
}

/**
 * The days read once whose confirming read the allowance pays for; the others held (read once, a
 * found absence not yet confirmed: not verified).
 */
function confirmable(days: readonly DayRead[], allowance: RequestAllowance | undefined): DayRead[] {
  if (allowance === undefined) return [...days];
  const go = days.filter((d) => allowance.mayStart(d.source));
  for (const d of days) if (!go.includes(d)) allowance.hold(d.source, d.resource, d.day);
  return go;
}

/** The days of the request the ledger held as done before the verify read them. */
async function plannedBefore(
  deps: VerifyDeps,
  request: VerifyRequest,
  base: SyncRequest,
): Promise<DayRead[]> {
  const days: DayRead[] = [];
  const resources = (base.resources ?? WINDOWED_RESOURCES) as readonly WindowedResource[];
  for (const source of request.sources ?? (await sourcesOf(deps.db)))
    for (const resource of resources)
      for (const day of daysFrom(request.from, request.to))
        if (request.only === undefined || request.only.has(windowKey(source, resource, day)))
          days.push({ source, resource, day });
  return doneDaysAmong(deps.db, days);
}

async function sourcesOf(db: Kysely<Database>): Promise<string[]> {
  return (await db.selectFrom('sources').select('source_id').execute()).map((r) => r.source_id);
}

/** The last outcome of each window (a day read again by a pass keeps the later one). */
function latestOutcomes(outcomes: readonly WindowOutcome[]): WindowOutcome[] {
  const latest = new Map<string, WindowOutcome>();
  for (const o of outcomes) latest.set(windowKey(o.source, o.resource, o.day), o);
  return [...latest.values()];
}

/**
 * Per window, what every read of the verify found, summed over its passes; its status, truncation
 * and error from the last. lacked: the rows of the day first stored by the verify (`lacked`, by
 * windowKey). A move rewrites its row (the dt): counted as moved, not as changed.
 */
export function verdictsOf(
  outcomes: readonly WindowOutcome[],
  settledBefore: ReadonlySet<string>,
  lacked: ReadonlyMap<string, number>,
): DayVerdict[] {
  const byKey = new Map<string, DayVerdict>();
  for (const o of outcomes) {
    const key = windowKey(o.source, o.resource, o.day);
    const before = byKey.get(key);
    byKey.set(key, {
      source: o.source,
      resource: o.resource,
      day: o.day,
      status: o.status,
      truncated: o.truncated,
      lacked: lacked.get(key) ?? 0,
      changed: (before?.changed ?? 0) + Math.max(0, o.updated - (o.moves ?? 0)),
      gone: (before?.gone ?? 0) + (o.missingUpstream ?? 0),
      moved: (before?.moved ?? 0) + (o.moves ?? 0),
      requests: (before?.requests ?? 0) + o.requests,
      settledBefore: settledBefore.has(key),
      ...(o.error === undefined ? {} : { error: o.error }),
    });
  }
  return [...byKey.values()].sort((a, b) =>
    a.day === b.day
      ? `${a.source}/${a.resource}`.localeCompare(`${b.source}/${b.resource}`)
      : a.day.localeCompare(b.day),
  );
}

/** A settled day the verify found items missing from: it was short, and is now repaired. */
export function foundShort(day: DayVerdict): boolean {
  return day.settledBefore && day.lacked > 0;
}

/**
 * After a verify recorded its findings, when INSIGHTS_METRICS_FILE or INSIGHTS_METRICS_PORT is
 * set: the metrics again (publish-run-metrics.ts), with its last run, so that the verify gauges
 * hold what it found (its runs published before it recorded anything). prom-client is loaded
 * only then, as in runSync.
 */
export async function publishVerifyMetrics(
  db: Kysely<Database>,
  result: VerifyResult,
  settings: { metricsFile: string | undefined; metricsPort: number | undefined },
  logger: Logger,
): Promise<{ metricsFileError?: unknown }> {
  const last = result.runs[result.runs.length - 1];
  if (last === undefined || (settings.metricsFile === undefined && settings.metricsPort === undefined))
    return {};
  const { publishRunMetrics } = await import('./publish-run-metrics.js');
  return publishRunMetrics(db, last, settings.metricsFile, logger);
}
