import { type Kysely, type Selectable, sql } from 'kysely';
import type { Database } from '../db/database.js';
import type { LockHolder } from '../db/lock-holder.js';
import { runLockHolder } from '../db/run-lock.js';
import type { ServerReadingsTable } from '../db/tables/server-readings.js';
import { describeReading, type ServerReading, storedReach } from '../extract/server-reading.js';
import { allWatermarks, truncatedOrFailedWindows } from '../ledger/read.js';
import { ALL_RESOURCES, isWindowed, tableOf, WINDOWED_RESOURCES } from '../schemas/resource-names.js';
import type { RunSummary } from '../sync/outcomes.js';
import { runBeating } from '../sync/run-log.js';
import { type DayString, dayDiff } from '../time/days.js';
import { type Attention, attentionReasons, type SourceState, sourceStates } from './attention.js';
import { lastReadingChanges, type ReadingChangeStatus } from './reading-history.js';
import { type SchemaDriftField, schemaDriftStatus } from './schema-drift-status.js';
import { lastSourceRuns } from './source-runs.js';
import {
  type OutnumberedDay,
  type UnconfirmedWebhookItems,
  unconfirmedWebhookItems,
  webhookOutnumberedDays,
} from './unconfirmed-webhooks.js';
import { type WebhookSourceStatus, webhookStatus } from './webhook-status.js';

export interface ResourceStatus {
  source: string;
  resource: string;
  watermark: DayString | null;
  /** Days between the watermark and yesterday (the last day that can be done); null without one. */
  lagDays: number | null;
  truncatedDays: DayString[];
  /** Truncated days the most recent run flagged or flagged again: what a monitor alerts on. */
  newTruncatedDays: DayString[];
  failedWindows: { day: DayString; error: string | null }[];
  rejectedItems: number;
  /** Item versions kept in key_collisions because an item of another day holds their key. */
  keyCollisions: number;
  /**
   * Windowed rows marked missing_upstream_since: their day's whole reads lacked them in two runs
   * in a row (src/load/moved-items.ts). Kept, never deleted. Snapshot resources: 0.
   */
  missingUpstream: number;
  /** What was learned about the server for this resource (windowed resources only). */
  reading: ServerReadingStatus | null;
}

/** server_readings as status shows it; `summary` is the one line the text output prints. */
export interface ServerReadingStatus {
  summary: string;
  startInclusive: boolean;
  endInclusive: boolean;
  serverDay: 'utc' | 'early' | 'late' | 'unknown';
  order: 'oldest-first' | 'newest-first' | 'unordered' | null;
  cap: number | null;
  largestResponse: number;
  limitRefused: number | null;
  /** What the server does with an ISO instant in the bounds; null until a day filled its cap. */
  instants: 'honoured' | 'ignored' | 'refused' | null;
  updatedAt: string;
}

export interface RunRow {
  runId: number;
  trigger: string;
  status: string;
  startedAt: string;
  finishedAt: string | null;
  durationMs: number | null;
  error: string | null;
  /** A backfill's range. */
  fromDay: DayString | null;
  toDay: DayString | null;
  /** Per source and resource: windows, items fetched, inserted, updated, unchanged, rejected, truncated days. */
  summary: RunSummary | null;
  /** Marked running, but its process is gone (no run lock, no heartbeat): shown as interrupted. */
  orphaned: boolean;
}

export interface StatusReport {
  today: DayString;
  resources: ResourceStatus[];
  runs: RunRow[];
  /** Webhook deliveries and webhook-only rows per source (the receiver, `serve`). */
  webhooks: WebhookSourceStatus[];
  /** Age in days after which a webhook-only row counts as unconfirmed. */
  webhookConfirmDays: number;
  /** Per source and resource, webhook-only rows delivered more than webhookConfirmDays ago. */
  webhookUnconfirmed?: UnconfirmedWebhookItems[];
  /** Days, older than webhookConfirmDays, whose webhook deliveries outnumber the API's items. */
  webhookOutnumberedDays?: OutnumberedDay[];
  /** Each source of the configuration and of the warehouse, with its state. */
  sources: SourceState[];
  /** Why status is not healthy, each with its next step; empty when healthy. */
  attention: Attention[];
  /** True exactly when `attention` is empty. */
  healthy: boolean;
  /** Who holds the run lock now (a run in progress, with its database user); null when free. */
  runLock: LockHolder | null;
  /** Per source, the last change of a server reading (reading_changes). */
  readingChanges: ReadingChangeStatus[];
  /** Fields the API sends that the spec does not describe (schema_drift). */
  schemaDrift: SchemaDriftField[];
}

/** Why status shows a run marked running as interrupted. */
export const RUN_GONE =
  'its process ended without recording the end (killed, or out of memory): it holds no run lock and sends no heartbeat; the next run records it as interrupted';

/**
 * INSIGHTS_WEBHOOK_CONFIRM_DAYS' default: beyond the nightly lookback (INSIGHTS_LOOKBACK_DAYS, 3),
 * so every nightly run that reads a delivered item's day again has passed before it is reported.
 */
export const WEBHOOK_CONFIRM_DAYS = 4;

/** What `status` shows: per source and resource, and the last runs. */
export async function statusReport(
  db: Kysely<Database>,
  today: DayString,
  lastRuns = 5,
  webhookOptions: { now?: Date; confirmDays?: number; configured?: readonly string[] } = {},
): Promise<StatusReport> {
  const stored = (await db.selectFrom('sources').select('source_id').orderBy('source_id').execute()).map(
    (s) => s.source_id,
  );
  const configured = webhookOptions.configured;
  const names = sourceNames(stored, configured);
  const resources = resourceStatuses(names, today, await loadResourceFacts(db));
  const runLock = await runLockHolder(db);
  const runRows = await loadRunRows(db, lastRuns, runLock);
  const inWarehouse = new Set(stored);
  const sourceRuns = await lastSourceRuns(db, names);
  const known = names.map((source) => {
    const lastRun = sourceRuns.get(source) ?? null;
    return {
      source,
      configured: configured === undefined ? null : configured.includes(source),
      inWarehouse: inWarehouse.has(source),
      lastRun,
      lastError: lastRun?.error ?? null,
    };
  });
  const attention = attentionReasons({ sources: known, resources, runs: runRows });
  // Webhook-only rows are not a failure (they are what fills the days the API truncates): reported, not unhealthy.
  const webhookConfirmDays = webhookOptions.confirmDays ?? WEBHOOK_CONFIRM_DAYS;
  const now = webhookOptions.now ?? new Date();
  const webhooks = await webhookStatus(db, { today, now, confirmDays: webhookConfirmDays });
  const webhookCutoff = { olderThan: new Date(now.getTime() - webhookConfirmDays * 86_400_000) };
  return {
    today,
    sources: sourceStates(known, attention),
    resources,
    runs: runRows.slice(0, lastRuns),
    webhooks,
    webhookConfirmDays,
    webhookUnconfirmed: await unconfirmedWebhookItems(db, webhookCutoff),
    webhookOutnumberedDays: await webhookOutnumberedDays(db, webhookCutoff),
    attention,
    healthy: attention.length === 0,
    runLock,
    readingChanges: await lastReadingChanges(db),
    schemaDrift: await schemaDriftStatus(db),
  };
}

/**
 * The configuration's sources as well as the warehouse's, sorted: a source whose key was always
 * rejected has written nothing, and would otherwise be missing from status altogether.
 */
function sourceNames(stored: readonly string[], configured: readonly string[] | undefined): string[] {
  return [...new Set([...stored, ...(configured ?? [])])].sort();
}

/** What the warehouse records per source and resource, read once for every source. */
interface ResourceFacts {
  marks: Awaited<ReturnType<typeof allWatermarks>>;
  windows: Awaited<ReturnType<typeof truncatedOrFailedWindows>>;
  readings: Selectable<ServerReadingsTable>[];
  collisions: { source_id: string; resource: string; n: number }[];
  missing: { source_id: string; resource: string; n: number }[];
  rejects: { source_id: string; resource: string; n: number }[];
  /** The latest run's id; null before the first run. */
  lastRunId: number | null;
}

async function loadResourceFacts(db: Kysely<Database>): Promise<ResourceFacts> {
  const marks = await allWatermarks(db);
  const windows = await truncatedOrFailedWindows(db);
  const readings = await db.selectFrom('server_readings').selectAll().execute();
  const collisions = await db
    .selectFrom('key_collisions')
    .select(['source_id', 'resource', sql<number>`count(*)::int`.as('n')])
    // A moved item's left version is no collision (src/load/moved-items.ts).
    .where('reason', '=', 'collision')
    .groupBy(['source_id', 'resource'])
    .execute();
  const missing = await missingUpstreamRows(db);
  const lastRun = await db
    .selectFrom('sync_runs')
    .select(sql<number | null>`max(run_id)`.as('id'))
    .executeTakeFirst();
  const rejects = await db
    .selectFrom('rejects')
    .select(['source_id', 'resource', sql<number>`count(*)::int`.as('n')])
    .groupBy(['source_id', 'resource'])
    .execute();
  return { marks, windows, readings, collisions, missing, rejects, lastRunId: lastRun?.id ?? null };
}

/** Every resource of every source, in that order, from what the warehouse records of them. */
function resourceStatuses(
  sources: readonly string[],
  today: DayString,
  facts: ResourceFacts,
): ResourceStatus[] {
  const { marks, windows, readings, collisions, missing, rejects, lastRunId } = facts;
  const resources: ResourceStatus[] = [];
  for (const source_id of sources) {
    for (const resource of ALL_RESOURCES) {
      const mark = marks.find((m) => m.source_id === source_id && m.resource === resource);
      const own = windows.filter((w) => w.source_id === source_id && w.resource === resource);
      const windowed = isWindowed(resource);
      resources.push({
        source: source_id,
        resource,
        watermark: mark?.day ?? null,
        lagDays: windowed && mark?.day ? Math.max(0, dayDiff(mark.day, today) - 1) : null,
        truncatedDays: own.filter((w) => w.truncated).map((w) => w.day),
        newTruncatedDays: own
          .filter((w) => w.truncated && lastRunId != null && w.run_id === lastRunId)
          .map((w) => w.day),
        failedWindows: own
          .filter((w) => w.status === 'failed')
          .map((w) => ({ day: w.day, error: w.last_error })),
        rejectedItems: rejects
          .filter(
            (r) =>
              r.source_id === source_id && (r.resource === resource || r.resource === `${resource}/detail`),
          )
          .reduce((n, r) => n + r.n, 0),
        keyCollisions: collisions.find((c) => c.source_id === source_id && c.resource === resource)?.n ?? 0,
        missingUpstream: missing.find((m) => m.source_id === source_id && m.resource === resource)?.n ?? 0,
        reading: readingStatus(readings.find((r) => r.source_id === source_id && r.resource === resource)),
      });
    }
  }
  return resources;
}

/** The last runs, newest first; at least one, since the latest run decides health even when none is shown (--runs 0). */
async function loadRunRows(
  db: Kysely<Database>,
  lastRuns: number,
  runLock: LockHolder | null,
): Promise<RunRow[]> {
  const runs = await db
    .selectFrom('sync_runs')
    .select([
      'run_id',
      'trigger',
      'status',
      'started_at',
      'finished_at',
      'error',
      'from_day',
      'to_day',
      'summary',
      runBeating.as('beating'),
    ])
    .orderBy('run_id', 'desc')
    .limit(Math.max(lastRuns, 1))
    .execute();
  return runs.map((r) => {
    // A run in progress holds the run lock, or (queued, waiting for its jobs) beats; one that
    // does neither has a process that is gone: killed, or out of memory.
    const gone = r.status === 'running' && !r.beating && runLock === null;
    return {
      runId: r.run_id,
      trigger: r.trigger,
      status: gone ? 'interrupted' : r.status,
      startedAt: r.started_at.toISOString(),
      finishedAt: r.finished_at?.toISOString() ?? null,
      durationMs: r.finished_at ? r.finished_at.getTime() - r.started_at.getTime() : null,
      error: gone ? RUN_GONE : r.error,
      fromDay: r.from_day,
      toDay: r.to_day,
      summary: r.summary as RunSummary | null,
      orphaned: gone,
    };
  });
}

function readingStatus(row: Selectable<ServerReadingsTable> | undefined): ServerReadingStatus | null {
  if (row === undefined) return null;
  const reading: ServerReading = {
    headMs: row.head_ms,
    tailMs: row.tail_ms,
    order: row.item_order,
    largestResponse: row.largest_response,
    cap: row.cap,
    limitRefused: row.limit_refused,
    instants: row.instants,
  };
  return {
    summary: describeReading(reading, storedReach(row.start_reach_ms, row.end_reach_ms)),
    startInclusive: row.start_inclusive,
    endInclusive: row.end_inclusive,
    serverDay: row.server_day,
    order: row.item_order,
    cap: row.cap,
    largestResponse: row.largest_response,
    limitRefused: row.limit_refused,
    instants: row.instants,
    updatedAt: row.updated_at.toISOString(),
  };
}

/** Rows marked missing upstream, per source and windowed resource. */
async function missingUpstreamRows(
  db: Kysely<Database>,
): Promise<{ source_id: string; resource: string; n: number }[]> {
  const counts = WINDOWED_RESOURCES.map(
    (resource) => sql`select source_id, ${resource}::text as resource, count(*)::int as n
      from ${sql.table(tableOf(resource))} where missing_upstream_since is not null group by source_id`,
  );
  const { rows } = await sql<{ source_id: string; resource: string; n: number }>`${sql.join(
    counts,
    sql` union all `,
  )}`.execute(db);
  return rows;
}
