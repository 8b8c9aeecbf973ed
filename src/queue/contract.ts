import type { RunTrigger } from '../db/tables/bookkeeping.js';
import type { Logger } from '../log/logger.js';
import type { Resource, WindowedResource } from '../schemas/resource-names.js';
import type { DayString } from '../time/days.js';

/**
 * What a run hands to whoever runs its windows (in this process, or the queue's workers), and
 * what comes back. The run's own types ride along as parameters: `Source` is its handle of a
 * source (the queue reads only its name), `Outcome` a window's outcome (the queue carries it
 * back whole from the worker that made it).
 */

/** One window of the plan. */
export interface PlannedWindow<Source extends { name: string } = { name: string }> {
  handle: Source;
  resource: WindowedResource;
  day: DayString;
  startDay: DayString;
  /** An earlier run settled the day empty (src/ledger/plan-days.ts, daysBefore). */
  emptyBefore?: boolean;
  /**
   * Items earlier runs stored of the day (src/ledger/plan-days.ts, daysBefore): the limit it is
   * first asked with is raised above it. Absent: none known.
   */
  itemsBefore?: number;
}

/** The first planned window of each source and resource, in the plan's order. */
export function firstOfEachEndpoint<Plan extends PlannedWindow>(plans: readonly Plan[]): Plan[] {
  const first = new Map<string, Plan>();
  for (const plan of plans) {
    const key = `${plan.handle.name}\u0000${plan.resource}`;
    if (!first.has(key)) first.set(key, plan);
  }
  return [...first.values()];
}

/** What a dispatcher is told about the run whose windows it runs. */
export interface DispatchRun<Outcome> {
  runId: number;
  trigger: RunTrigger;
  today: DayString;
  logger: Logger;
  signal?: AbortSignal;
  /** Whether a window of this source and resource is no longer worth running (key rejected, refused, shutdown). */
  skipped: (source: string, resource: Resource) => boolean;
  /** Each window's outcome, as soon as it is known. */
  settle: (outcome: Outcome) => void;
  /** Requests by HTTP status, per source, for the run's result. */
  requests: Record<string, Record<string, number>>;
}

/** Runs a run's windows somewhere else than in this process (the queue's workers). */
export interface WindowDispatch<Source extends { name: string }, Outcome> {
  /** Every planned window's outcome, in the order of `plans`. */
  runWindows(plans: readonly PlannedWindow<Source>[], run: DispatchRun<Outcome>): Promise<Outcome[]>;
  /**
   * Around the planner's own requests of one source (its snapshots, the run's last proof): holding
   * every one of its queue slots, so that its client may ask `perSource` requests at once and the
   * source's bound holds with any run's windows.
   */
  aroundSource<T>(source: string, fn: () => Promise<T>): Promise<T>;
  /** The most requests of one source in flight at once: its queue slots. */
  readonly perSource: number;
}

/** What a worker stores as a job's output: the window's outcome and its requests by status. */
export interface WindowJobOutput<Outcome> {
  outcome: Outcome;
  statuses: Record<string, number>;
}
