import { type Kysely, sql } from 'kysely';
import pLimit from 'p-limit';
import type pg from 'pg';
import { type ApiClient, createApiClient, type Pace } from '../api/api-client.js';
import type { Config } from '../config/config.js';
import type { SourceConfig } from '../config/source-config.js';
import type { Database } from '../db/database.js';
import type { RunStatus, RunTrigger } from '../db/tables/bookkeeping.js';
import { AuthError } from '../errors.js';
import { emptyReaskPolicy } from '../extract/empty-answers.js';
import { describeReading } from '../extract/server-reading.js';
import { planDays } from '../ledger/plan-days.js';
import { doneDaysAmong } from '../ledger/read.js';
import type { Logger } from '../log/logger.js';
import type { PlannedWindow, WindowDispatch } from '../queue/contract.js';
import {
  ALL_RESOURCES,
  type Resource,
  SNAPSHOT_RESOURCES,
  WINDOWED_RESOURCES,
} from '../schemas/resources.js';
import { type DayString, todayUtc } from '../time/days.js';
import type { SourceHandle, SyncContext } from './context.js';
import { dayKey, lateArrivalsOf } from './late-arrivals.js';
import { newItemsOnDays, recordLateArrivals } from './late-arrivals-store.js';
import { limitedClient } from './limited-client.js';
import {
  EndpointRefusals,
  everyEndpointForbidden,
  type RunResult,
  type RunSummary,
  type SetAsideCount,
  type SnapshotOutcome,
  skippedWindow,
  summarize,
  unwrittenSnapshot,
  type WindowOutcome,
  withSetAside,
} from './outcomes.js';
import { loadReadings, type SourceReadings, storeReading } from './reading-store.js';
import { budgetPace } from './request-budget.js';
import { finishRun, startRun } from './run-log.js';
import { SNAPSHOT_JOBS } from './run-snapshots.js';
import { runWindow } from './run-window.js';
import { defaultWindowBudget, windowMemory } from './window-memory.js';

export type SyncSettings = Pick<
  Config,
  | 'concurrency'
  | 'lookbackDays'
  | 'startDate'
  | 'limit'
  | 'maxLimit'
  | 'requestTimeoutMs'
  | 'maxAttempts'
  | 'retryBaseMs'
  | 'retryMaxMs'
  | 'retryAfterCapMs'
  | 'maxInvalidShare'
> &
  Partial<Pick<Config, 'metricsFile' | 'metricsPort'>>;

export interface SyncRequest {
  trigger: RunTrigger;
  /** A backfill's range; a sync plans from the watermarks instead. */
  range?: { from: DayString; to: DayString };
  /** Default: every resource. */
  resources?: readonly Resource[];
  /** Source names; default: every configured source. */
  sources?: readonly string[];
}

export interface SyncDeps {
  pool: pg.Pool;
  db: Kysely<Database>;
  logger: Logger;
  now: () => Date;
  sources: readonly SourceConfig[];
  settings: SyncSettings;
  /**
   * Tests inject clients (fake timers, fault-injecting fetch); default: the real HTTP client. One
   * that sends requests must pass `pace` on: it is the source's request budget.
   */
  createClient?: (source: SourceConfig, options: ClientOptions) => ApiClient;
  /** Aborted on SIGTERM/SIGINT: windows not started yet are skipped, the run ends 'interrupted'. */
  signal?: AbortSignal;
  /** Called after each window, e.g. for a progress bar. */
  onWindow?: (outcome: WindowOutcome, done: number, total: number) => void;
  /** Called once the plan is known, with the run's id (for log lines about the run). */
  onPlan?: (totalWindows: number, runId: number) => void;
  /**
   * The caller prints the run's table where the log is read too (a terminal): the per-resource
   * counts are then logged at debug, not info, so that the screen shows them once, not twice.
   */
  summaryShown?: boolean;
  /**
   * Where the windows run. Default: in this process, under the global bound on requests. The
   * queue (src/sync/queue-dispatch.ts) sends them to `worker` processes instead.
   */
  dispatch?: WindowDispatch<SourceHandle, WindowOutcome>;
}

/** What a source's client is made with, in process and in a worker alike. */
export interface ClientOptions {
  signal?: AbortSignal;
  logger: Logger;
  onResponse?: (status: number | null) => void;
  /** The source's requests-per-second budget (src/sync/request-budget.ts); unset: none. */
  pace?: Pace;
}

/**
 * One run: plan the day windows of every source and resource, fetch them under one global bound
 * on requests in flight, load each in its own transaction, snapshot tests and heatmaps, record
 * the run. Returns an outcome per window instead of throwing halfway.
 */
export async function runSync(deps: SyncDeps, request: SyncRequest): Promise<RunResult> {
  const started = Date.now();
  const today = todayUtc(deps.now());
  const resources = new Set(request.resources ?? ALL_RESOURCES);
  const sources = deps.sources.filter(
    (s) => request.sources === undefined || request.sources.includes(s.name),
  );
  const runId = await startRun(deps.db, request.trigger, {
    from: request.range?.from ?? null,
    to: request.range?.to ?? null,
  });
  const logger = deps.logger.child({ runId });
  const requestLimit = pLimit(deps.settings.concurrency);
  // Fetched-but-not-loaded windows hold memory: at most twice the request bound at once.
  const windowLimit = pLimit(deps.settings.concurrency * 2);
  const ctx: SyncContext = {
    pool: deps.pool,
    db: deps.db,
    logger,
    now: deps.now,
    limits: { limit: deps.settings.limit, maxLimit: deps.settings.maxLimit },
    maxInvalidShare: deps.settings.maxInvalidShare,
    runId,
    memory: windowMemory(defaultWindowBudget()),
    signal: deps.signal,
    emptyReask: emptyReaskPolicy(deps.settings),
  };
  const makeClient =
    deps.createClient ?? ((source, options) => defaultClient(source, deps.settings, options));

  const plans: PlannedWindow<SourceHandle>[] = [];
  const handles: SourceHandle[] = [];
  const readings: SourceReadings[] = [];
  const requests: RunResult['requests'] = {};
  for (const source of sources) {
    const byStatus: Record<string, number> = {};
    requests[source.name] = byStatus;
    const client = makeClient(source, {
      logger,
      onResponse: (status) => {
        const key = status === null ? 'none' : String(status);
        byStatus[key] = (byStatus[key] ?? 0) + 1;
      },
      signal: deps.signal,
      pace: budgetPace(deps.db, source),
    });
    const learned = await loadReadings(deps.db, source.name);
    readings.push(learned);
    const handle: SourceHandle = {
      name: source.name,
      baseUrl: client.baseUrl,
      // Queued runs make only snapshot requests here, one at a time per source: the source's
      // bound holds for them too (they run under one of its slots).
      client: limitedClient(client, deps.dispatch === undefined ? requestLimit : pLimit(1)),
      knowledge: learned.knowledge,
      pii: source.pii,
      expectedAllocation: source.expectedAllocation,
    };
    handles.push(handle);
    for (const resource of WINDOWED_RESOURCES) {
      if (!resources.has(resource)) continue;
      const { days, startDay } = await planDays(
        deps.db,
        deps.settings,
        source.name,
        resource,
        request.range,
        today,
      );
      for (const day of days) plans.push({ handle, resource, day, startDay });
    }
  }
  // Oldest days first across resources, so watermarks advance as the run goes.
  plans.sort((a, b) => (a.day < b.day ? -1 : a.day > b.day ? 1 : 0));
  deps.onPlan?.(plans.length, runId);
  // A sync's lookback re-reads are what late data is measured by; a backfill's range is the
  // operator's choice (a year read again would say nothing of the lookback).
  const readBefore = request.range
    ? []
    : await doneDaysAmong(
        deps.db,
        plans.map((p) => ({ source: p.handle.name, resource: p.resource, day: p.day })),
      );
  logger.info({ windows: plans.length, sources: handles.length, trigger: request.trigger }, 'run planned');

  // A rejected key (401) stops the source; an endpoint's 403/404 stops that resource only.
  const fatal = new Map<string, string>();
  const refusals = new EndpointRefusals();
  const skipped = (source: string, resource: Resource) =>
    fatal.has(source) || refusals.has(source, resource) || deps.signal?.aborted === true;
  const settle = (outcome: WindowOutcome | SnapshotOutcome): void => {
    if (outcome.fatal && outcome.error) fatal.set(outcome.source, outcome.error);
    if (
      outcome.refused &&
      outcome.error &&
      refusals.add(outcome.source, outcome.resource, outcome.refused, outcome.error)
    )
      logger.warn(
        { source: outcome.source, resource: outcome.resource, status: outcome.refused },
        outcome.error,
      );
  };
  let done = 0;
  const settleWindow = (outcome: WindowOutcome): void => {
    settle(outcome);
    done += 1;
    deps.onWindow?.(outcome, done, plans.length);
  };
  const runWindowsHere = (): Promise<WindowOutcome[]> =>
    settleAll(
      plans.map((plan) =>
        windowLimit(async (): Promise<WindowOutcome> => {
          const outcome = skipped(plan.handle.name, plan.resource)
            ? skippedWindow(plan.handle.name, plan.resource, plan.day)
            : await runWindow(ctx, plan.handle, plan.resource, plan.day, { today, startDay: plan.startDay });
          settleWindow(outcome);
          return outcome;
        }),
      ),
    );
  const runSnapshots = (): Promise<SnapshotOutcome[]> =>
    settleAll(
      handles.flatMap((handle) => {
        const jobs = SNAPSHOT_RESOURCES.map((resource) => ({
          resource,
          run: () => SNAPSHOT_JOBS[resource](ctx, handle, today),
        }));
        const wanted = jobs.filter((job) => resources.has(job.resource));
        const runAll = () =>
          settleAll(
            wanted.map(async (job): Promise<SnapshotOutcome> => {
              const outcome = skipped(handle.name, job.resource)
                ? unwrittenSnapshot(handle.name, job.resource, 'skipped')
                : await job.run();
              settle(outcome);
              return outcome;
            }),
          );
        if (wanted.length === 0) return [];
        return [deps.dispatch === undefined ? runAll() : deps.dispatch.aroundSnapshots(handle.name, runAll)];
      }),
    ).then((groups) => groups.flat());
  const dispatch = deps.dispatch;
  // In process, windows and snapshots share the global bound. Queued, the snapshots come once the
  // workers have run the windows: a source's slots are then free, and a 401 seen by a worker
  // spares the snapshots their requests.
  const [windows, snapshots] =
    dispatch === undefined
      ? await settleBoth(runWindowsHere(), runSnapshots())
      : [
          await dispatch.runWindows(plans, {
            runId,
            trigger: request.trigger,
            today,
            logger,
            signal: deps.signal,
            skipped,
            settle: settleWindow,
            requests,
          }),
          await runSnapshots(),
        ];

  for (const handle of handles) {
    // 403 from every endpoint asked: a key that may read nothing is a rejected key.
    if (fatal.has(handle.name) || !everyEndpointForbidden(handle.name, windows, snapshots)) continue;
    const rejected = new AuthError(handle.client.baseUrl, handle.name, 403, ' on every endpoint').message;
    fatal.set(handle.name, rejected);
    for (const o of [...windows, ...snapshots]) if (o.source === handle.name && o.refused) o.fatal = true;
    logger.error({ source: handle.name }, rejected);
  }

  markNotAttempted([...windows, ...snapshots], fatal, refusals);

  // Over what the run read at its start: a queued run's workers may have stored since.
  for (const learned of readings) {
    for (const resource of WINDOWED_RESOURCES) {
      if (!resources.has(resource)) continue;
      await storeReading(deps.db, learned, resource, { runId, logger });
      const { reading } = learned.knowledge[resource];
      if (reading.largestResponse > 0)
        logger.debug(
          { source: learned.source, resource, reading: describeReading(reading) },
          'server reading',
        );
    }
  }

  const late = lateArrivalsOf(
    await newItemsOnDays(deps.db, runId, readBefore),
    new Set(readBefore.map((d) => dayKey(d.source, d.resource, d.day))),
    today,
  );
  await recordLateArrivals(deps.db, runId, late);
  if (late.length > 0) logger.info({ lateArrivals: late }, 'late arrivals: items new on days read before');
  const summary = withSetAside(summarize(windows, snapshots), await setAsideBy(deps.db, runId));
  const { status, error } = runStatus(windows, snapshots, fatal, deps.signal?.aborted === true);
  await finishRun(deps.db, runId, { status, summary, error });
  const durationMs = Date.now() - started;
  logSummary(logger, summary, deps.summaryShown === true ? 'debug' : 'info');
  logger.info({ status, durationMs }, 'run finished');
  const result = { runId, status, summary, windows, snapshots, error, durationMs, requests };
  // prom-client costs a process half a second to load: only when the run's metrics go somewhere.
  if (deps.settings.metricsFile !== undefined || deps.settings.metricsPort !== undefined) {
    const { publishRunMetrics } = await import('./publish-run-metrics.js');
    return { ...result, ...(await publishRunMetrics(deps.db, result, deps.settings.metricsFile, logger)) };
  }
  return result;
}

/**
 * The run's counts per source and resource, one line each: what the table of a manual run shows,
 * in the log of every run (the scheduled one prints no table).
 */
function logSummary(logger: Logger, summary: RunSummary, level: 'info' | 'debug'): void {
  for (const [source, resources] of Object.entries(summary))
    for (const [resource, s] of Object.entries(resources)) {
      if (!s) continue;
      // The errors were logged when they happened, once each: not again here.
      const { errors: _logged, truncatedDays, ...counts } = s;
      logger[level]({ source, resource, ...counts, truncated: truncatedDays.length }, 'resource summary');
    }
}

/**
 * Promise.all that waits for every promise before it rejects: a run that fails (its database
 * gone) ends only once none of its windows is still working, so nothing is logged after its last line.
 */
async function settleAll<T>(promises: readonly Promise<T>[]): Promise<T[]> {
  const settled = await Promise.allSettled(promises);
  const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed !== undefined) throw failed.reason;
  return settled.map((r) => (r as PromiseFulfilledResult<T>).value);
}

/** settleAll of two promises of different types. */
async function settleBoth<A, B>(a: Promise<A>, b: Promise<B>): Promise<[A, B]> {
  const [first, second] = await Promise.allSettled([a, b]);
  if (first.status === 'rejected') throw first.reason;
  if (second.status === 'rejected') throw second.reason;
  return [first.value, second.value];
}

/**
 * Windows and snapshots skipped because their source's key was rejected or their endpoint refused
 * did not load for a reason the operator must fix: they say why, and count as failed.
 */
function markNotAttempted(
  outcomes: readonly (WindowOutcome | SnapshotOutcome)[],
  fatal: ReadonlyMap<string, string>,
  refusals: EndpointRefusals,
): void {
  for (const o of outcomes) {
    if (o.status !== 'skipped') continue;
    const why = fatal.get(o.source) ?? refusals.reason(o.source, o.resource);
    if (why === undefined) continue;
    o.notAttempted = true;
    o.error = why;
  }
}

function runStatus(
  windows: readonly WindowOutcome[],
  snapshots: readonly SnapshotOutcome[],
  fatal: ReadonlyMap<string, string>,
  interrupted: boolean,
): { status: Exclude<RunStatus, 'running'>; error: string | null } {
  const outcomes = [...windows, ...snapshots];
  const succeeded = outcomes.some((o) => o.status !== 'failed' && o.status !== 'skipped');
  const firstFatal = fatal.values().next();
  // One source's rejected key does not undo what the others loaded: partial, naming the key.
  if (!firstFatal.done)
    return {
      status: succeeded ? 'partial' : 'failed',
      error:
        fatal.size === 1 ? firstFatal.value : `${firstFatal.value} (and ${fatal.size - 1} more source(s))`,
    };
  if (interrupted) return { status: 'interrupted', error: 'interrupted before every window ran' };
  const failures = outcomes.filter((o) => o.status === 'failed');
  if (failures.length === 0) return { status: 'ok', error: null };
  const first = failures[0];
  const where =
    first && 'day' in first
      ? `${first.source}/${first.resource}/${first.day}`
      : `${first?.source}/${first?.resource}`;
  return {
    status: succeeded ? 'partial' : 'failed',
    error: `${failures.length} window(s) failed; first ${where}: ${first?.error ?? 'unknown error'}`,
  };
}

export function defaultClient(
  source: SourceConfig,
  settings: SyncSettings,
  options: ClientOptions,
): ApiClient {
  return createApiClient({
    source: { name: source.name, baseUrl: source.baseUrl, apiKey: source.apiKey },
    timeoutMs: settings.requestTimeoutMs,
    retry: {
      maxAttempts: settings.maxAttempts,
      baseDelayMs: settings.retryBaseMs,
      maxDelayMs: settings.retryMaxMs,
      retryAfterCapMs: settings.retryAfterCapMs,
    },
    logger: options.logger,
    signal: options.signal,
    onResponse: options.onResponse,
    pace: options.pace,
  });
}

/** What this run left in key_collisions, per source, resource and reason. */
async function setAsideBy(db: Kysely<Database>, runId: number): Promise<SetAsideCount[]> {
  const rows = await db
    .selectFrom('key_collisions')
    .select(['source_id', 'resource', 'reason', sql<number>`count(*)::int`.as('n')])
    .where('run_id', '=', runId)
    .groupBy(['source_id', 'resource', 'reason'])
    .execute();
  return rows.map((r) => ({ source: r.source_id, resource: r.resource, reason: r.reason, count: r.n }));
}
