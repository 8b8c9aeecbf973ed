import { setTimeout as sleep } from 'node:timers/promises';
import type { PgBoss } from 'pg-boss';
import { bookkeepingSchema } from '../db/bookkeeping.js';
import { LATEST_MIGRATION } from '../db/migrator.js';
import { errorMessage } from '../errors.js';
import type { DispatchRun, PlannedWindow, WindowDispatch, WindowJobOutput } from '../queue/contract.js';
import { endedJobs, jobOutputs } from '../queue/job-table.js';
import { openSlotSession } from '../queue/source-slots.js';
import {
  ensureWindowQueue,
  type QueueSettings,
  sendWindowJobs,
  type WindowJob,
  windowQueueName,
} from '../queue/window-queue.js';
import { liveWorkers } from '../queue/workers.js';
import type { SourceHandle } from './context.js';
import { failedWindow, skippedWindow, type WindowOutcome } from './outcomes.js';

export interface QueueDispatchOptions {
  boss: PgBoss;
  url: string;
  schema: string;
  settings: QueueSettings;
  /** How often the planner reads its jobs' states. Default 250 ms. */
  pollMs?: number;
  /** Once the run's jobs are queued (the planner then lets the run lock go: src/sync/run-locked.ts). */
  onQueued?: (runId: number) => Promise<void>;
}

/**
 * The planner's side of the queue: the run's windows become jobs, the planner waits until each
 * has ended, and reads each window's outcome from its job. Workers (src/sync/window-worker.ts)
 * do the windows. A source whose key a worker found rejected (or an endpoint refused) has its
 * remaining jobs cancelled; so has every queued job of the run on shutdown, while jobs already
 * taken finish.
 */
export function queueDispatch(options: QueueDispatchOptions): WindowDispatch<SourceHandle, WindowOutcome> {
  return {
    async runWindows(
      plans: readonly PlannedWindow<SourceHandle>[],
      run: DispatchRun<WindowOutcome>,
    ): Promise<WindowOutcome[]> {
      const { jobs, ids, sources } = await queueJobs(options, plans, run);
      const outcomes: (WindowOutcome | undefined)[] = plans.map(() => undefined);
      await awaitJobs(
        options,
        run,
        jobs,
        new Map(ids.map((id, index) => [id, index])),
        sources,
        (index, outcome) => {
          outcomes[index] = outcome;
          run.settle(outcome);
        },
      );
      return outcomes.map((o, index) => o ?? skippedWindow(jobs[index]?.source ?? '', 'feedback', ''));
    },
    perSource: options.settings.sourceConcurrency,
    async aroundSource<T>(source: string, fn: () => Promise<T>): Promise<T> {
      const session = await openSlotSession(options.url, options.schema);
      try {
        await session.claimAll(source);
        return await fn();
      } finally {
        await session.release().catch(() => {});
        await session.close();
      }
    },
  };
}

/** The run's windows as jobs, one per planned window, in the plan's order. */
export function windowJobs(
  plans: readonly PlannedWindow<SourceHandle>[],
  run: Pick<DispatchRun<WindowOutcome>, 'runId' | 'today'>,
): WindowJob[] {
  return plans.map((p) => ({
    runId: run.runId,
    source: p.handle.name,
    resource: p.resource,
    day: p.day,
    startDay: p.startDay,
    today: run.today,
    ...(p.emptyBefore === true ? { emptyBefore: true } : {}),
    ...(p.itemsBefore !== undefined && p.itemsBefore > 0 ? { itemsBefore: p.itemsBefore } : {}),
    schema: LATEST_MIGRATION,
  }));
}

async function queueJobs(
  options: QueueDispatchOptions,
  plans: readonly PlannedWindow<SourceHandle>[],
  run: DispatchRun<WindowOutcome>,
): Promise<{ jobs: WindowJob[]; ids: string[]; sources: string[] }> {
  const { boss, settings } = options;
  const sources = [...new Set(plans.map((p) => p.handle.name))];
  for (const source of sources) await ensureWindowQueue(boss, options.schema, source, settings);
  const jobs = windowJobs(plans, run);
  // What workers of runs long gone checked is of no use any more.
  await boss
    .getDb()
    .executeSql(`delete from "${bookkeepingSchema(options.schema)}".queue_run_checks where run_id < $1`, [
      run.runId - 50,
    ]);
  const ids = await sendWindowJobs(boss, run.trigger, jobs, settings);
  run.logger.info({ jobs: ids.length, sources: sources.length }, 'windows queued for the workers');
  await options.onQueued?.(run.runId);
  return { jobs, ids, sources };
}

/** Waits until every job has ended, cancelling those no longer worth running, and reads each outcome. */
async function awaitJobs(
  options: QueueDispatchOptions,
  run: DispatchRun<WindowOutcome>,
  jobs: readonly WindowJob[],
  pending: Map<string, number>,
  sources: readonly string[],
  finish: (index: number, outcome: WindowOutcome) => void,
): Promise<void> {
  const { boss } = options;
  const pollMs = options.pollMs ?? 250;
  const cancelled = new Set<string>();
  const queueNames = sources.map(windowQueueName);
  let looks = 0;
  let since = new Date(0);
  // Whether the planner has said no worker is alive, and when it last looked.
  const workers = { workerless: false, lookedAt: 0 };
  while (pending.size > 0) {
    await lookForWorkers(options, run, workers, pending.size);
    // Jobs of a source (or resource) not worth running any more, or of a run stopping: cancelled.
    const toCancel = jobsToCancel(pending, jobs, cancelled, run.skipped);
    // pg-boss cancels only jobs not yet ended; one a worker holds ends as the worker says.
    for (const [source, batch] of toCancel) await boss.cancel(windowQueueName(source), batch);
    // Only the jobs that ended since the last look (by the database's clock, with a margin
    // for a completion that commits late), and every 20th look all of the run's pending ones:
    // asking for hundreds of ids each time costs the database more than the windows do. Ids
    // and states first; the outputs of the newly ended only (the margin sees each job again
    // on several looks, and an output is the window's whole outcome).
    const full = looks % 20 === 0;
    looks += 1;
    const look = await endedJobs(
      boss,
      options.schema,
      full ? { ids: [...pending.keys()] } : { queues: queueNames, since },
    );
    if (look.seen !== undefined) since = look.seen;
    const ended = look.ended.map((r) => r.id).filter((id) => pending.has(id));
    if (ended.length > 0) {
      for (const row of await jobOutputs(boss, options.schema, ended)) {
        const index = pending.get(row.id);
        if (index === undefined) continue;
        pending.delete(row.id);
        const job = jobs[index] as WindowJob;
        finish(index, outcomeOf(job, row.state, row.output, run));
      }
    }
    if (pending.size > 0) await sleep(pollMs);
  }
}

/** Every WORKER_LOOK_MS, whether a worker is alive: said when none is, and when one is back. */
async function lookForWorkers(
  options: QueueDispatchOptions,
  run: DispatchRun<WindowOutcome>,
  workers: { workerless: boolean; lookedAt: number },
  pendingJobs: number,
): Promise<void> {
  if (Date.now() - workers.lookedAt < WORKER_LOOK_MS) return;
  workers.lookedAt = Date.now();
  const alive = await liveWorkers(options.boss, options.schema);
  const notice = workerNotice(alive, workers.workerless);
  if (notice === 'none')
    run.logger.warn(
      { jobs: pendingJobs },
      'no live worker is taking the window jobs of this run: start one with `insights-sync worker` (the jobs wait in the queue)',
    );
  if (notice === 'back') run.logger.info({ workers: alive }, 'a worker is taking the window jobs');
  workers.workerless = alive === 0;
}

/**
 * The pending jobs, by source, whose window is no longer worth running and that were not
 * cancelled before; they are marked cancelled here.
 */
export function jobsToCancel(
  pending: ReadonlyMap<string, number>,
  jobs: readonly WindowJob[],
  cancelled: Set<string>,
  skipped: DispatchRun<WindowOutcome>['skipped'],
): Map<string, string[]> {
  const toCancel = new Map<string, string[]>();
  for (const [id, index] of pending) {
    const job = jobs[index] as WindowJob;
    if (!cancelled.has(id) && skipped(job.source, job.resource)) {
      cancelled.add(id);
      toCancel.set(job.source, [...(toCancel.get(job.source) ?? []), id]);
    }
  }
  return toCancel;
}

/** How often a waiting planner reads whether any worker is alive. */
const WORKER_LOOK_MS = 2_000;

/**
 * What a waiting planner says of the workers: `none` when it first finds none alive (its jobs would
 * wait silently otherwise), `back` when one is alive again after that, else nothing.
 */
export function workerNotice(alive: number, saidNone: boolean): 'none' | 'back' | undefined {
  if (alive === 0) return saidNone ? undefined : 'none';
  return saidNone ? 'back' : undefined;
}

function outcomeOf(
  job: WindowJob,
  state: string,
  output: unknown,
  run: DispatchRun<WindowOutcome>,
): WindowOutcome {
  const where = { source: job.source, resource: job.resource, day: job.day };
  if (state === 'cancelled') return skippedWindow(job.source, job.resource, job.day);
  if (state === 'completed' && isJobOutput(output)) {
    const byStatus = run.requests[job.source] ?? {};
    run.requests[job.source] = byStatus;
    for (const [status, count] of Object.entries(output.statuses))
      byStatus[status] = (byStatus[status] ?? 0) + count;
    return output.outcome;
  }
  // Failed: its worker threw, or died, more often than INSIGHTS_QUEUE_RETRY_LIMIT allows.
  return failedWindow(where, 0, `window job ${state}: ${failureMessage(output)}`);
}

/** pg-boss stores a worker's failure as given, and an expiry as `{ value: { message } }`. */
function failureMessage(output: unknown): string {
  const record = (value: unknown) =>
    typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : undefined;
  const message = record(output)?.message ?? record(record(output)?.value)?.message;
  return typeof message === 'string' ? message : errorMessage(output);
}

function isJobOutput(output: unknown): output is WindowJobOutput<WindowOutcome> {
  return typeof output === 'object' && output !== null && 'outcome' in output && 'statuses' in output;
}
