import { type Kysely, sql } from 'kysely';
import pLimit from 'p-limit';
import type pg from 'pg';
import { type ApiClient, createApiClient, type Pace } from '../api/api-client.js';
import type { Config } from '../config/config.js';
import type { SourceConfig } from '../config/source-config.js';
import { isConnectionLost } from '../db/connection.js';
import type { Database } from '../db/database.js';
import { describeShortage, ResourceShortageError, resourceShortage } from '../db/resource-shortage.js';
import type { RunStatus, RunTrigger } from '../db/tables/bookkeeping.js';
import { errorMessage, InsightsError } from '../errors.js';
import { emptyReaskPolicy } from '../extract/empty-answers.js';
import { proveRun } from '../extract/fetch-day.js';
import { type ReopenCause, reopenedBecause } from '../extract/reading-session.js';
import { describeReading } from '../extract/server-reading.js';
import { daysBefore, planDays } from '../ledger/plan-days.js';
import { type DayRead, doneDaysAmong, reopenedDaysAmong } from '../ledger/read.js';
import { windowKey } from '../ledger/verified.js';
import type { Logger } from '../log/logger.js';
import { firstOfEachEndpoint, type PlannedWindow, type WindowDispatch } from '../queue/contract.js';
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
import { NeighboursStored } from './neighbours-stored.js';
import {
  countResponse,
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
import { type JudgedVerdicts, proveQueuedRun } from './queue-proof.js';
import { loadReadings, recordSessionProofs, type SourceReadings, storeReading } from './reading-store.js';
import type { RequestAllowance } from './request-allowance.js';
import { budgetPace } from './request-budget.js';
import { RunGate } from './run-gate.js';
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
  /**
   * Only these windows of the range (windowKey of source, resource and day): a verify's
   * confirming pass, or the scrub's slice of a night. Default: every window of the plan.
   */
  only?: ReadonlySet<string>;
  /**
   * A hard stop on requests (the scrub's verify): counts every request of the run per source, and
   * a window of a source whose allowance is spent is not started (skipped, held by the allowance);
   * a window that started finishes. Honoured by windows run in process only: the scrub's verify
   * never queues. With one, the windows start in the order of `only` (the caller's priority: the
   * scrub's least recently verified first), so that those it holds back are the last of it.
   */
  allowance?: RequestAllowance;
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
  const runId = await startRun(deps.db, request.trigger, {
    from: request.range?.from ?? null,
    to: request.range?.to ?? null,
  });
  const logger = deps.logger.child({ runId });
  const done: RunOutcomes = { windows: [], snapshots: [] };
  try {
    return await runStarted(deps, request, { runId, started, logger, done });
  } catch (error) {
    // Recorded where the database still takes the write (a full disk refuses a table's new
    // rows, rarely the run's row): never left 'running'. Where it cannot, the next run's start
    // marks it interrupted (interruptAbandonedRuns).
    await recordRunFailure(deps.db, runId, error, done).catch((recording: unknown) =>
      logger.warn({ err: errorMessage(recording) }, 'could not record the run as failed'),
    );
    throw error;
  }
}

/** What the windows and snapshots of a run came to, as far as they ran. */
interface RunOutcomes {
  windows: WindowOutcome[];
  snapshots: SnapshotOutcome[];
}

/**
 * A run that ended on an error of the database (or a bug), with the counts of what it did: failed,
 * or interrupted when the connection went away (the next run takes its days again either way).
 */
async function recordRunFailure(
  db: Kysely<Database>,
  runId: number,
  error: unknown,
  done: RunOutcomes,
): Promise<void> {
  const shortage = resourceShortage(error);
  await finishRun(db, runId, {
    status: isConnectionLost(error) ? 'interrupted' : 'failed',
    summary: summarize(done.windows, done.snapshots),
    error:
      shortage === undefined
        ? errorMessage(error)
        : `the database failed the run: ${describeShortage(shortage)}`,
  });
}

async function runStarted(
  deps: SyncDeps,
  request: SyncRequest,
  run: { runId: number; started: number; logger: Logger; done: RunOutcomes },
): Promise<RunResult> {
  const { runId, started, logger } = run;
  const today = todayUtc(deps.now());
  const resources = new Set(request.resources ?? ALL_RESOURCES);
  const ctx = runContext(deps, runId, logger);
  const opened = await openSources(
    deps,
    chosenSources(deps.sources, request.sources),
    logger,
    request.allowance,
  );
  const planned = (await planWindows(deps, opened.handles, resources, request.range, today)).filter(
    (p) => request.only === undefined || request.only.has(windowKey(p.handle.name, p.resource, p.day)),
  );
  const plans = request.allowance === undefined ? planned : inOrderOf(planned, request.only);
  deps.onPlan?.(plans.length, runId);
  // A sync's lookback re-reads are what late data is measured by; a backfill's range is the
  // operator's choice (a year read again would say nothing of the lookback).
  const readBefore = request.range
    ? []
    : await doneDaysAmong(
        deps.db,
        plans.map((p) => ({ source: p.handle.name, resource: p.resource, day: p.day })),
      );
  logger.info(
    { windows: plans.length, sources: opened.handles.length, trigger: request.trigger },
    'run planned',
  );

  const gate = new RunGate(deps.signal);
  const { windows, snapshots } = await runWindowsAndSnapshots(deps, ctx, gate, {
    runId,
    request,
    today,
    resources,
    plans,
    handles: opened.handles,
    requests: opened.requests,
  });
  run.done.windows = windows;
  run.done.snapshots = snapshots;
  // Nothing more can be written: the run is recorded failed and the command ends on it (runSync).
  if (gate.shortage !== undefined) throw new ResourceShortageError(gate.shortage);
  for (const { source, error } of gate.rejectForbiddenEverywhere(
    opened.handles.map((h) => ({ name: h.name, baseUrl: h.client.baseUrl })),
    windows,
    snapshots,
  ))
    logger.error({ source }, error);
  gate.markNotAttempted([...windows, ...snapshots]);

  await storeRunReadings(deps.db, opened.readings, resources, runId, logger);
  await recordRunLateArrivals(deps.db, runId, readBefore, today, logger);
  const summary = withSetAside(summarize(windows, snapshots), await setAsideBy(deps.db, runId));
  const { status, error } = runStatus(windows, snapshots, gate.fatal, stopReason(deps.signal));
  await finishRun(deps.db, runId, { status, summary, error });
  const durationMs = Date.now() - started;
  logSummary(logger, summary, deps.summaryShown === true ? 'debug' : 'info');
  logger.info({ status, durationMs }, 'run finished');
  const result = { runId, status, summary, windows, snapshots, error, durationMs, requests: opened.requests };
  // prom-client costs a process half a second to load: only when the run's metrics go somewhere.
  if (deps.settings.metricsFile !== undefined || deps.settings.metricsPort !== undefined) {
    const { publishRunMetrics } = await import('./publish-run-metrics.js');
    return { ...result, ...(await publishRunMetrics(deps.db, result, deps.settings.metricsFile, logger)) };
  }
  return result;
}

/** The configured sources a request names; all of them when it names none. */
export function chosenSources(
  sources: readonly SourceConfig[],
  names: readonly string[] | undefined,
): SourceConfig[] {
  return sources.filter((s) => names === undefined || names.includes(s.name));
}

function runContext(deps: SyncDeps, runId: number, logger: Logger): SyncContext {
  return {
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
}

interface OpenedSources {
  handles: SourceHandle[];
  /** What the run read of each source's server at its start. */
  readings: SourceReadings[];
  requests: RunResult['requests'];
}

/** A client and a handle per source, with what the warehouse has learned of its server. */
async function openSources(
  deps: SyncDeps,
  sources: readonly SourceConfig[],
  logger: Logger,
  allowance: RequestAllowance | undefined,
): Promise<OpenedSources> {
  const makeClient =
    deps.createClient ?? ((source, options) => defaultClient(source, deps.settings, options));
  const requestLimit = pLimit(deps.settings.concurrency);
  const opened: OpenedSources = { handles: [], readings: [], requests: {} };
  for (const source of sources) {
    const byStatus: Record<string, number> = {};
    opened.requests[source.name] = byStatus;
    const client = makeClient(source, {
      logger,
      onResponse: (status) => {
        countResponse(byStatus, status);
        allowance?.count(source.name);
      },
      signal: deps.signal,
      pace: budgetPace(deps.db, source),
    });
    const learned = await loadReadings(deps.db, source.name);
    opened.readings.push(learned);
    opened.handles.push({
      name: source.name,
      baseUrl: client.baseUrl,
      // Queued runs make only their snapshots' and last proof's requests here, each source's
      // under all of its queue slots: as many at once as the source allows.
      client: limitedClient(
        client,
        deps.dispatch === undefined ? requestLimit : pLimit(deps.dispatch.perSource),
      ),
      knowledge: learned.knowledge,
      pii: source.pii,
      expectedAllocation: source.expectedAllocation,
      neighbours: new NeighboursStored(),
    });
  }
  return opened;
}

/** The day windows of every source and wanted windowed resource, oldest first. */
async function planWindows(
  deps: SyncDeps,
  handles: readonly SourceHandle[],
  resources: ReadonlySet<Resource>,
  range: SyncRequest['range'],
  today: DayString,
): Promise<PlannedWindow<SourceHandle>[]> {
  const plans: PlannedWindow<SourceHandle>[] = [];
  for (const handle of handles)
    for (const resource of WINDOWED_RESOURCES) {
      if (!resources.has(resource)) continue;
      const { days, startDay } = await planDays(deps.db, deps.settings, handle.name, resource, range, today);
      const { empty, counts } = await daysBefore(deps.db, handle.name, resource, days);
      for (const day of days)
        plans.push({
          handle,
          resource,
          day,
          startDay,
          emptyBefore: empty.has(day),
          itemsBefore: counts.get(day) ?? 0,
        });
    }
  return oldestFirst(plans);
}

/**
 * The plans in the order their windows have in `order` (a Set keeps the order it was built in);
 * without one, as they are. Plans it does not name go last, in their own order.
 */
export function inOrderOf<P extends { handle: { name: string }; resource: string; day: DayString }>(
  plans: readonly P[],
  order: ReadonlySet<string> | undefined,
): P[] {
  if (order === undefined) return [...plans];
  const rank = new Map([...order].map((key, i) => [key, i]));
  const at = (p: P) => rank.get(windowKey(p.handle.name, p.resource, p.day)) ?? rank.size;
  return [...plans].sort((a, b) => at(a) - at(b));
}

/** Oldest days first across resources, so watermarks advance as the run goes. */
export function oldestFirst<P extends { day: DayString }>(plans: P[]): P[] {
  return plans.sort((a, b) => (a.day < b.day ? -1 : a.day > b.day ? 1 : 0));
}

interface RunPlan {
  runId: number;
  request: SyncRequest;
  today: DayString;
  resources: ReadonlySet<Resource>;
  plans: readonly PlannedWindow<SourceHandle>[];
  handles: readonly SourceHandle[];
  requests: RunResult['requests'];
}

/** Runs the planned windows (here or through the dispatch) and every source's snapshots. */
async function runWindowsAndSnapshots(
  deps: SyncDeps,
  ctx: SyncContext,
  gate: RunGate,
  run: RunPlan,
): Promise<{ windows: WindowOutcome[]; snapshots: SnapshotOutcome[] }> {
  const { logger } = ctx;
  const settle = (outcome: WindowOutcome | SnapshotOutcome): void => {
    if (gate.settle(outcome))
      logger.warn(
        { source: outcome.source, resource: outcome.resource, status: outcome.refused },
        outcome.error,
      );
  };
  // Reopened days read again add to the run's windows: progress counts them in its total.
  const count = { done: 0, total: run.plans.length };
  const settleWindow = (outcome: WindowOutcome): void => {
    settle(outcome);
    count.done += 1;
    deps.onWindow?.(outcome, count.done, count.total);
  };
  const readAgain = (windows: number): void => {
    count.total += windows;
  };
  const skipped = (source: string, resource: Resource) => gate.skipped(source, resource);
  const snapshotsOf = () => runSnapshots(ctx, deps.dispatch, run, skipped, settle);
  const dispatch = deps.dispatch;
  // In process, windows and snapshots share the global bound. Queued, the snapshots come once the
  // workers have run the windows: a source's slots are then free, and a 401 seen by a worker
  // spares the snapshots their requests.
  if (dispatch === undefined) {
    const [windows, snapshots] = await settleBoth(
      runWindowsHere(ctx, deps.settings.concurrency, run, skipped, { settle: settleWindow, readAgain }),
      snapshotsOf(),
    );
    return { windows, snapshots };
  }
  const dispatchRun = {
    runId: run.runId,
    trigger: run.request.trigger,
    today: run.today,
    logger,
    signal: deps.signal,
    skipped,
    settle: settleWindow,
    requests: run.requests,
  };
  const windows = await dispatch.runWindows(run.plans, dispatchRun);
  // Days a worker reopened (it, or another, proved the reading they were settled under stale)
  // are queued again, a few passes at most.
  const judged: JudgedVerdicts = new Map();
  let proved: Proved = 'every source';
  for (let pass = 0; pass < REOPEN_PASSES && deps.signal?.aborted !== true; pass++) {
    const proving = run.plans.filter(
      (plan) => !skipped(plan.handle.name, plan.resource) && provedAgain(proved, plan),
    );
    await proveQueuedRun({ ...ctx, runId: run.runId }, proving, run.today, {
      judged,
      aroundSource: (source, fn) => dispatch.aroundSource(source, fn),
    });
    const again = await reopenedInLedger(deps.db, run.plans);
    if (again.length === 0) break;
    logReopened(logger, again, 'workers');
    readAgain(again.length);
    windows.push(...(await dispatch.runWindows(again, dispatchRun)));
    proved = sourcesOf(again);
  }
  return { windows: latestPerWindow(windows), snapshots: await snapshotsOf() };
}

type Skipped = (source: string, resource: Resource) => boolean;

async function runWindowsHere(
  ctx: SyncContext,
  concurrency: number,
  run: RunPlan,
  skipped: Skipped,
  tally: { settle: (outcome: WindowOutcome) => void; readAgain: (windows: number) => void },
): Promise<WindowOutcome[]> {
  // Fetched-but-not-loaded windows hold memory: at most twice the request bound at once.
  const windowLimit = pLimit(concurrency * 2);
  const { allowance } = run.request;
  const runAll = (plans: readonly PlannedWindow<SourceHandle>[]) =>
    settleAll(
      plans.map((plan) =>
        windowLimit(async (): Promise<WindowOutcome> => {
          const outcome = await startWindow(ctx, run, plan, skipped);
          tally.settle(outcome);
          return outcome;
        }),
      ),
    );
  const outcomes = await runAll(run.plans);
  // Days a proof reopened (the reading they were settled under proved stale) are read again,
  // each pass closed by the run's last proof, while the run is not stopping. The reopened days of
  // a source whose allowance is spent are held: the ledger keeps them reopened for the next run.
  let proved: Proved = 'every source';
  for (let pass = 0; pass < REOPEN_PASSES && ctx.signal?.aborted !== true; pass++) {
    const again = heldBack(await reopenedPlans(ctx, run, skipped, proved), allowance);
    if (again.length === 0) break;
    logReopened(ctx.logger, again, reopenCause(again));
    // In the ledger before they are read again: a window of the pass records the reopened days it
    // has not seen recorded, and one that committed after a day's own re-read left it reopened.
    await recordLeftProofs(ctx, run);
    tally.readAgain(again.length);
    outcomes.push(...(await runAll(again)));
    proved = sourcesOf(again);
  }
  await recordLeftProofs(ctx, run);
  return latestPerWindow(outcomes);
}

/** The plans whose source may still start a window; the others held by the allowance. */
function heldBack(
  plans: readonly PlannedWindow<SourceHandle>[],
  allowance: RequestAllowance | undefined,
): PlannedWindow<SourceHandle>[] {
  if (allowance === undefined) return [...plans];
  const go = plans.filter((plan) => allowance.mayStart(plan.handle.name));
  for (const plan of plans) if (!go.includes(plan)) allowance.hold(plan.handle.name, plan.resource, plan.day);
  return go;
}

/** A window read now, or skipped: its source refused or stopped, or its allowance spent. */
async function startWindow(
  ctx: SyncContext,
  run: RunPlan,
  plan: PlannedWindow<SourceHandle>,
  skipped: Skipped,
): Promise<WindowOutcome> {
  const { name } = plan.handle;
  if (skipped(name, plan.resource)) return skippedWindow(name, plan.resource, plan.day);
  const { allowance } = run.request;
  if (allowance !== undefined && !allowance.mayStart(name)) {
    allowance.hold(name, plan.resource, plan.day);
    return skippedWindow(name, plan.resource, plan.day);
  }
  return runWindow(ctx, plan.handle, plan.resource, plan.day, {
    today: run.today,
    startDay: plan.startDay,
    emptyBefore: plan.emptyBefore === true,
    itemsBefore: plan.itemsBefore ?? 0,
  });
}

/**
 * What the proofs found that no window's transaction recorded (the last pass's windows failed, the
 * database was away): recorded now, so that the next run reads the reopened days first.
 */
async function recordLeftProofs(ctx: SyncContext, run: RunPlan): Promise<void> {
  for (const handle of run.handles)
    for (const resource of WINDOWED_RESOURCES) {
      const session = handle.knowledge[resource].session;
      if (session === undefined) continue;
      const key = { sourceId: handle.name, resource };
      await recordSessionProofs(ctx.pool, key, session).catch((error: unknown) =>
        ctx.logger.warn(
          { source: handle.name, resource, err: errorMessage(error) },
          'could not record the reopened days',
        ),
      );
    }
}

/** The run reads again days it flagged while the server changed how it answers (readAgain). */
export const REOPENED_CHANGED_LINE =
  'days flagged while the server changed how it answers: reading them again';

function logReopened(
  logger: Logger,
  again: readonly PlannedWindow<SourceHandle>[],
  cause: ReopenCause | 'workers',
): void {
  const fields = { days: again.length, sources: [...new Set(again.map((plan) => plan.handle.name))] };
  if (cause === 'stale')
    logger.warn(fields, 'server reading proved stale since days were settled: reading them again');
  else if (cause === 'changed') logger.warn(fields, REOPENED_CHANGED_LINE);
  else if (cause === 'workers')
    logger.warn(
      fields,
      'days the workers reopened (a reading proved stale, or a cap learned late): reading them again',
    );
  // Routine on a first read of a server with a cap: its answers before the cap was known may have been cut.
  else
    logger.info(
      fields,
      "days answered before the server cap was learned, or under a request narrower than the server's reading as learned since, may be short: reading them again",
    );
}

/** Why the run reads `again` (reopenedBecause): the sessions of its sources' resources say. */
function reopenCause(again: readonly PlannedWindow<SourceHandle>[]): ReopenCause {
  return reopenedBecause(
    again.map((plan) => ({ session: plan.handle.knowledge[plan.resource].session, day: plan.day })),
  );
}

/** The planned windows of days the ledger holds reopened (queued runs: the workers reopened them). */
async function reopenedInLedger(
  db: Kysely<Database>,
  plans: readonly PlannedWindow<SourceHandle>[],
): Promise<PlannedWindow<SourceHandle>[]> {
  const found = await reopenedDaysAmong(
    db,
    plans.map((plan) => ({ source: plan.handle.name, resource: plan.resource, day: plan.day })),
  );
  const wanted = new Set(found.map((d) => `${d.source}\u0000${d.resource}\u0000${d.day}`));
  return plans.filter((plan) => wanted.has(`${plan.handle.name}\u0000${plan.resource}\u0000${plan.day}`));
}

/**
 * The sources a pass's closing proof proves: every one after the run's windows; after a pass of
 * days read again, only their sources. Another source's ledger rows and session are as the proof
 * before left them: proved again, it would ask the same days after and canaries, settling nothing.
 */
type Proved = 'every source' | ReadonlySet<string>;

function sourcesOf(plans: readonly PlannedWindow<SourceHandle>[]): ReadonlySet<string> {
  return new Set(plans.map((plan) => plan.handle.name));
}

function provedAgain(proved: Proved, plan: PlannedWindow<SourceHandle>): boolean {
  return proved === 'every source' || proved.has(plan.handle.name);
}

/** Passes of reopened days a run reads again before it leaves the rest to the next run. */
const REOPEN_PASSES = 3;

/** Each source and resource's last proof of the run: the planned windows of the days it reopens. */
async function reopenedPlans(
  ctx: SyncContext,
  run: RunPlan,
  skipped: Skipped,
  proving: Proved,
): Promise<PlannedWindow<SourceHandle>[]> {
  // Side by side: each endpoint's proof is its own knowledge, and the clients share the run's
  // request bound (openSources), as its windows do.
  const proved = firstOfEachEndpoint(run.plans)
    .filter((plan) => !skipped(plan.handle.name, plan.resource))
    .filter((plan) => provedAgain(proving, plan))
    .map(async (plan) => {
      const days = await proveRun(
        plan.handle.client,
        plan.resource,
        ctx.limits,
        plan.handle.knowledge[plan.resource],
        run.today,
      ).catch((error: unknown) => {
        ctx.logger.warn(
          { source: plan.handle.name, resource: plan.resource, err: errorMessage(error) },
          "the run's last proof of the server reading failed; its days stay unproved",
        );
        return [];
      });
      return days.filter((day) => day < run.today).map((day) => ({ ...plan, day }));
    });
  return oldestFirst((await Promise.all(proved)).flat());
}

/** One outcome per window: a day read again keeps its last outcome, with every request counted. */
function latestPerWindow(outcomes: readonly WindowOutcome[]): WindowOutcome[] {
  const latest = new Map<string, WindowOutcome>();
  for (const outcome of outcomes) {
    const key = `${outcome.source}\u0000${outcome.resource}\u0000${outcome.day}`;
    const before = latest.get(key);
    latest.set(
      key,
      before === undefined ? outcome : { ...outcome, requests: outcome.requests + before.requests },
    );
  }
  return [...latest.values()];
}

function runSnapshots(
  ctx: SyncContext,
  dispatch: SyncDeps['dispatch'],
  run: RunPlan,
  skipped: Skipped,
  settle: (outcome: SnapshotOutcome) => void,
): Promise<SnapshotOutcome[]> {
  return settleAll(
    run.handles.flatMap((handle) => {
      const wanted = SNAPSHOT_RESOURCES.filter((resource) => run.resources.has(resource));
      const runAll = () =>
        settleAll(
          wanted.map(async (resource): Promise<SnapshotOutcome> => {
            const outcome = skipped(handle.name, resource)
              ? unwrittenSnapshot(handle.name, resource, 'skipped')
              : await SNAPSHOT_JOBS[resource](ctx, handle, run.today);
            settle(outcome);
            return outcome;
          }),
        );
      if (wanted.length === 0) return [];
      return [dispatch === undefined ? runAll() : dispatch.aroundSource(handle.name, runAll)];
    }),
  ).then((groups) => groups.flat());
}

/** Stores what each source's windows taught of its server. */
async function storeRunReadings(
  db: Kysely<Database>,
  readings: readonly SourceReadings[],
  resources: ReadonlySet<Resource>,
  runId: number,
  logger: Logger,
): Promise<void> {
  // Over what the run read at its start: a queued run's workers may have stored since.
  for (const learned of readings) {
    for (const resource of WINDOWED_RESOURCES) {
      if (!resources.has(resource)) continue;
      await storeReading(db, learned, resource, { runId, logger });
      const { reading } = learned.knowledge[resource];
      if (reading.largestResponse > 0)
        logger.debug(
          { source: learned.source, resource, reading: describeReading(reading) },
          'server reading',
        );
    }
  }
}

async function recordRunLateArrivals(
  db: Kysely<Database>,
  runId: number,
  readBefore: readonly DayRead[],
  today: DayString,
  logger: Logger,
): Promise<void> {
  const late = lateArrivalsOf(
    await newItemsOnDays(db, runId, readBefore),
    new Set(readBefore.map((d) => dayKey(d.source, d.resource, d.day))),
    today,
  );
  await recordLateArrivals(db, runId, late);
  if (late.length > 0) logger.info({ lateArrivals: late }, 'late arrivals: items new on days read before');
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
 * Why the run stopped early: undefined when it did not; '' for a signal (SIGINT, SIGTERM: the
 * operator knows); the message of an error of ours that stopped it (the run lock's connection
 * lost), which the run log keeps.
 */
function stopReason(signal: AbortSignal | undefined): string | undefined {
  if (signal?.aborted !== true) return undefined;
  return signal.reason instanceof InsightsError ? signal.reason.message : '';
}

function runStatus(
  windows: readonly WindowOutcome[],
  snapshots: readonly SnapshotOutcome[],
  fatal: ReadonlyMap<string, string>,
  stopped: string | undefined,
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
  if (stopped !== undefined)
    return {
      status: 'interrupted',
      error: `interrupted before every window ran${stopped === '' ? '' : `: ${stopped}`}`,
    };
  const failures = outcomes.filter((o) => o.status === 'failed');
  if (failures.length === 0) return { status: 'ok', error: null };
  const first = failures[0];
  const where =
    first && 'day' in first
      ? `${first.source}/${first.resource}/${first.day}`
      : `${first?.source}/${first?.resource}`;
  // The windows a refusal kept from running: the summary counts them as not run, so does this line.
  const notRun = outcomes.filter((o) => o.status === 'skipped' && o.notAttempted === true).length;
  return {
    status: succeeded ? 'partial' : 'failed',
    error: `${failures.length} window(s) failed${notRun === 0 ? '' : `, ${notRun} not run because of it`}; first ${where}: ${first?.error ?? 'unknown error'}`,
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
