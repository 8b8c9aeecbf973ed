import { reopenUncoveredSettled, sessionOf } from '../extract/day-plan.js';
import { proveRun, type ResourceKnowledge } from '../extract/fetch-day.js';
import {
  CANARY_MOST,
  holdSettled,
  reopenUncapped,
  serverChanged,
  stretchEnds,
} from '../extract/reading-session.js';
import { atCap, serverDay } from '../extract/server-reading.js';
import { ledgerCanaries, servedTimesOfDay, settledDaysOfRun } from '../ledger/read.js';
import { firstOfEachEndpoint, type PlannedWindow } from '../queue/contract.js';
import type { WindowedResource } from '../schemas/resource-names.js';
import type { DayString } from '../time/days.js';
import type { SourceHandle, SyncContext } from './context.js';
import {
  exchangeVerdicts,
  loadReadings,
  recordSessionProofs,
  type SourceReadings,
  shareCheck,
} from './reading-store.js';

/**
 * Per source and resource, the latest stale verdict an earlier pass of the planner's last proof
 * judged the run's days by (0 for none), and each moved reach it judged them by (movedReach). The
 * days read again after it were read by workers that had heard it, under readings they learned
 * since: judged again only on a later verdict, or a reach moved again.
 */
export type JudgedVerdicts = Map<string, number>;

/**
 * The last proof of a queued run, made by its planner once the workers have read the windows.
 * Each worker proves the stretches of days it completes (reading-session.ts), so the days it
 * settled after its last proof stand unproved: a deploy after that proof would leave them short
 * for good. The planner proves them as the in-process run's end does, from the ledger: the
 * reading the workers stored, the days of the run not proved, and a canary, a day a proof found
 * whole, with the times of its items as the warehouse holds them. A stale verdict is told to the
 * workers (they learn the reading again) and reopens the days in the ledger, which the run then
 * queues again (it finds them in the ledger).
 * It also does for caps what the in-process run's end does: the days any worker settled at a size
 * no cap it knew covered (the ledger's uncapped_served) are checked against the caps the run's
 * workers proved; those a cap may have cut are reopened.
 */
export async function proveQueuedRun(
  ctx: SyncContext & { runId: number },
  plans: readonly PlannedWindow<SourceHandle>[],
  today: DayString,
  options: {
    judged?: JudgedVerdicts;
    /** Around one source's proofs: holding its queue slots (queue-dispatch.ts, aroundSource). */
    aroundSource?: <T>(source: string, fn: () => Promise<T>) => Promise<T>;
  } = {},
): Promise<void> {
  const judged = options.judged ?? new Map();
  const aroundSource = options.aroundSource ?? ((_source, fn) => fn());
  const endpoints = firstOfEachEndpoint(plans);
  const sources = [...new Set(endpoints.map(({ handle }) => handle.name))];
  // Sources side by side, each under all of its slots, its endpoints side by side too: its client
  // asks as many requests at once as the source allows (run-sync.ts, openSources), as its windows
  // would, and no window of another run adds to them.
  const failed = (source: string, resource?: WindowedResource) => (error: unknown) => {
    ctx.logger.warn(
      { source, resource, err: error instanceof Error ? error.message : String(error) },
      "the queued run's last proof of the server reading failed; its days stay unproved",
    );
  };
  await Promise.all(
    sources.map((source) =>
      aroundSource(source, () =>
        Promise.all(
          endpoints
            .filter(({ handle }) => handle.name === source)
            .map(({ handle, resource }) =>
              proveEndpoint(ctx, handle, resource, today, judged, plannedDays(plans, handle, resource)).catch(
                failed(source, resource),
              ),
            ),
        ),
      ).catch(failed(source)),
    ),
  );
}

async function proveEndpoint(
  ctx: SyncContext & { runId: number },
  handle: SourceHandle,
  resource: WindowedResource,
  today: DayString,
  judged: JudgedVerdicts,
  /** The days the run's windows read: their own requests were asked. */
  planned: ReadonlySet<DayString>,
): Promise<void> {
  const key = { source: handle.name, resource };
  const settled = await settledDaysOfRun(ctx.db, key, ctx.runId, today);
  const unproved = settled.filter((d) => !d.proved).map((d) => d.day);
  const uncapped = settled.filter((d) => d.uncappedServed !== null);
  const settledOn = settled.flatMap(({ day, under, parts }) =>
    under === null ? [] : [{ day, range: under, parts }],
  );
  if (unproved.length === 0 && uncapped.length === 0 && settledOn.length === 0) return;
  // What the workers learned and stored, the caps and verdicts they told: not the planner's copy.
  const readings = await loadReadings(ctx.db, handle.name, ctx.runId);
  await exchangeVerdicts(ctx.db, readings, resource, { runId: ctx.runId, logger: ctx.logger });
  const heard = readings.verdicts.get(resource)?.heard ?? 0;
  const judgedKey = `${handle.name}/${resource}`;
  const knowledge = readings.knowledge[resource];
  const session = sessionOf(knowledge);
  // A worker found a reading of the source's server stale (this resource's or another's): the
  // server changed while the run read, perhaps answering both ways for a while.
  if (heard > 0) serverChanged(session);
  // Days settled at a size a cap the run's workers proved since may have cut, whichever worker
  // read them, are read again. Not a ceiling (days settled at one size again and again, as a cap
  // lowered mid-run leaves them): the ledger's order interleaves the workers' days, and a steady
  // server's sizes made one there, costing a request and days read again.
  const sizes = new Map(uncapped.map(({ day, uncappedServed }) => [day, uncappedServed ?? 0]));
  reopenUncapped(session, (served) => atCap(knowledge.reading, served), sizes);
  // The last day of each stretch the run settled, as the warehouse holds it: the proof asks the
  // day after (reading-session.ts, daysAfterStretches), whose answer may show it short.
  const days = settled.map((d) => d.day);
  for (const day of stretchEnds(days, new Set([...days, ...planned]), today))
    holdSettled(session, day, await servedTimesOfDay(ctx.db, key, day));
  const canaries = unproved.length === 0 ? [] : await canariesOf(ctx, key, knowledge);
  if (canaries.length === 0 && unproved.length > 0)
    ctx.logger.info(
      { source: handle.name, resource, days: unproved.length },
      'no day settled whole to prove the queued run by: its last days stay unproved',
    );
  for (const canary of canaries) {
    const { day, times, proved } = canary;
    session.canary = proved ? { day, times } : { day, times, unproved: true };
    // One no proof found whole is as unproved as the rest: a stale verdict reopens it too.
    session.unproved = proved ? unproved.filter((other) => other !== day) : [...unproved];
    await proveRun(handle.client, resource, ctx.limits, knowledge, today);
    // A canary no proof found whole may be one of the short days itself, served short again: its
    // holding proves nothing. Its days stay unproved; a stale verdict has reopened them.
    if (!proved) session.proved = [];
    // Kept unless its answer may have been cut (proofVerdict 'unproven'): a smaller one may tell.
    if (session.canary !== undefined) break;
  }
  if (canaries.length === 0) await proveRun(handle.client, resource, ctx.limits, knowledge, today);
  // Where a worker found the reading stale, every day the run settled is judged against the
  // reading learned by now, whichever worker settled it under whatever it knew then; on a server
  // that held still, a worker's own requests stand (the stored reading may know less than it did),
  // as they do after a verdict an earlier pass judged by: the days read again since were read
  // knowing it. Judging those by this reading, learned from fewer items than a worker's may have
  // been, read quiet days a third and fourth time.
  // A reach a worker stored past the evidence this run (it saw the server's day move by a zone's
  // hours, which is no verdict) judges them as a verdict does, once a reach: a day another worker
  // settled before on a narrower request may start or end hours short.
  const relearnedHere = (knowledge.relearned ?? 0) > 0;
  const moved = movedReach(readings, resource);
  const movedKey = moved === undefined ? undefined : `${judgedKey} reach ${moved}`;
  const movedUnjudged = movedKey !== undefined && !judged.has(movedKey);
  if (relearnedHere || heard > (judged.get(judgedKey) ?? 0) || movedUnjudged)
    reopenUncoveredSettled(knowledge, settledOn);
  if (movedKey !== undefined) judged.set(movedKey, 1);
  // A stale verdict re-learned the reading here, a cap may be suspected: the workers hear them
  // before their next window.
  await exchangeVerdicts(ctx.db, readings, resource, { runId: ctx.runId, logger: ctx.logger });
  judged.set(judgedKey, readings.verdicts.get(resource)?.heard ?? 0);
  await shareCheck(ctx.db, readings, resource, { runId: ctx.runId, logger: ctx.logger });
  await recordSessionProofs(ctx.pool, { sourceId: handle.name, resource }, session);
}

/**
 * The reach past its evidence that a worker of this run stored with the reading (a zone's move it
 * saw: the server's day now starts or ends hours from where its items put it), as text; undefined
 * where the stored row has none, or was not written this run.
 */
function movedReach(readings: SourceReadings, resource: WindowedResource): string | undefined {
  const row = readings.seen.get(resource)?.row;
  if (row === undefined || !row.thisRun) return undefined;
  const { startMs, endMs } = row.reach;
  if (startMs === undefined && endMs === undefined) return undefined;
  return `${startMs ?? ''}..${endMs ?? ''}`;
}

function plannedDays(
  plans: readonly PlannedWindow<SourceHandle>[],
  handle: SourceHandle,
  resource: WindowedResource,
): Set<DayString> {
  return new Set(
    plans.filter((plan) => plan.handle === handle && plan.resource === resource).map((plan) => plan.day),
  );
}

function canariesOf(
  ctx: SyncContext & { runId: number },
  key: { source: string; resource: WindowedResource },
  knowledge: ResourceKnowledge,
) {
  const room = Math.min(ctx.limits.limit, knowledge.reading.cap ?? ctx.limits.limit);
  // As a window picks its own (reading-session.ts, settled): a day below the room where the
  // canary's request holds it alone (a UTC server's day), else a third of it (with neighbours).
  const most = serverDay(knowledge.reading) === 'utc' ? room - 1 : Math.floor(room / 3);
  return ledgerCanaries(ctx.db, key, ctx.runId, Math.min(CANARY_MOST, most));
}
