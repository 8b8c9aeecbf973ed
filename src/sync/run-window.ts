import { RequestAbortedError } from '../api/abort.js';
import type { ApiClient } from '../api/api-client.js';
import { resourceShortage } from '../db/resource-shortage.js';
import { inOneStatement, inTransaction } from '../db/transaction.js';
import { windowWritesOf } from '../db/write-gate.js';
import { AuthError, EndpointRefusedError, errorMessage } from '../errors.js';
import { sessionOf } from '../extract/day-plan.js';
import { type FetchedDay, fetchDay } from '../extract/fetch-day.js';
import { judgeInvalid } from '../extract/invalid-policy.js';
import { giveBackProofs, ledgerTook, takeProofs } from '../extract/reading-session.js';
import { itemDay } from '../extract/server-reading.js';
import { validateItems } from '../extract/validate.js';
import { recordWindowFailure } from '../ledger/ledger.js';
import { loadRejects } from '../load/rejects.js';
import { ensureSource } from '../load/sources.js';
import { loadWindowItems, WINDOW_MERGE, type WindowLoad, windowMergeValues } from '../load/windowed.js';
import type { Logger } from '../log/logger.js';
import { protectPersonalData } from '../privacy/pii.js';
import type { PlannedWindow } from '../queue/contract.js';
import type { Rejected } from '../schemas/rejected.js';
import { type WindowedResource, windowedItemSchemas } from '../schemas/resources.js';
import type { DayString } from '../time/days.js';
import type { SourceHandle, SyncContext } from './context.js';
import { failedWindow, skippedWindow, type WindowOutcome } from './outcomes.js';
import { relearnAndReopen } from './reading-store.js';
import { driftInWindow, noteWindowDrift, windowDrift } from './schema-drift.js';
import { storeWindow, withoutForgotten } from './store-window.js';
import { approxJsonBytes, HELD_PER_JSON_BYTE, type WindowLease } from './window-memory.js';

/** What the run's plan tells a window besides its day: PlannedWindow's hints, and the run's today. */
export type WindowPlan = Pick<PlannedWindow, 'startDay' | 'emptyBefore' | 'itemsBefore'> & {
  today: DayString;
};

/**
 * One window: fetch the day, validate each item, then in ONE transaction load its items, their
 * visitors, its rejects, its ledger row and the watermark. A crash anywhere leaves either all of
 * it or none of it, and the next run takes the day again.
 */
export async function runWindow(
  ctx: SyncContext,
  source: SourceHandle,
  resource: WindowedResource,
  day: DayString,
  plan: WindowPlan,
): Promise<WindowOutcome> {
  // Admitted while what it will hold fits the run's byte budget (src/sync/window-memory.ts).
  const lease = await ctx.memory.admit(`${source.name}/${resource}`);
  try {
    return await fetchAndStore(ctx, source, resource, day, plan, lease);
  } finally {
    lease.release();
  }
}

async function fetchAndStore(
  ctx: SyncContext,
  source: SourceHandle,
  resource: WindowedResource,
  day: DayString,
  plan: WindowPlan,
  lease: WindowLease,
): Promise<WindowOutcome> {
  const base = { source: source.name, resource, day };
  const log = ctx.logger.child({ source: source.name, resource, day });
  let requests = 0;
  try {
    const fetched = await fetchDay(
      reservingClient(source.client, lease),
      resource,
      day,
      ctx.limits,
      source.knowledge[resource],
      day >= plan.today,
      plan.emptyBefore === true,
      plan.itemsBefore ?? 0,
    );
    requests = fetched.requests;
    // Counted as they came; sent to the warehouse only where no window of the run stored them yet.
    const came = fetched.otherDays.length;
    const neighbours = source.neighbours?.fresh(resource, fetched.otherDays);
    if (neighbours !== undefined) fetched.otherDays = neighbours.items;
    const items = { ...(await validateFetched(fetched, lease, source, resource)), neighbours: came };
    const rejectContext = { sourceId: source.name, resource, day, runId: ctx.runId };

    // One bad item never fails a day: only evidence that the response itself is broken does.
    const { total, valid, rejected } = items;
    const judged = judgeInvalid({ total, rejected, maxInvalidShare: ctx.maxInvalidShare });
    if (judged.fail) {
      await recordInvalidDay(ctx, source, rejectContext, rejected, judged.reason);
      log.warn({ rejected: rejected.length, total }, 'window failed: too many invalid items');
      return failedWindow(base, requests, judged.reason, {
        fetched: total,
        rejected: rejected.length,
        discarded: valid.length,
      });
    }

    const status = day < plan.today ? 'done' : 'open';
    const session = sessionOf(source.knowledge[resource]);
    const proofs = takeProofs(session, day);
    const drift = windowDrift(ctx, { sourceId: source.name, resource, day, valid });
    const loaded = await storeWindow(ctx.pool, {
      sourceId: source.name,
      baseUrl: source.baseUrl,
      resource,
      day,
      status,
      valid,
      rejected,
      requestedLimit: fetched.requestedLimit,
      servedCount: fetched.servedCount,
      ...(fetched.uncappedServed === undefined ? {} : { uncappedServed: fetched.uncappedServed }),
      ...(fetched.settledUnder === undefined ? {} : { settledUnder: fetched.settledUnder }),
      truncated: fetched.truncated,
      runId: ctx.runId,
      startDay: plan.startDay,
      today: plan.today,
      // A day flagged while the reading changed is recorded reopened too: read again first.
      proofs: fetched.readAgain ? { ...proofs, reopened: [...proofs.reopened, day] } : proofs,
      ...(driftInWindow(drift) ? { drift: { total: drift.total } } : {}),
    }).catch((error: unknown) => {
      // Not written: what the proofs found goes with the next window that is.
      giveBackProofs(session, proofs);
      throw error;
    });
    ledgerTook(session, proofs, day);
    const lacking = loaded.lacking ?? 0;
    if (lacking > 0) await answerContradicted(ctx, source, resource, log, lacking);
    await noteWindowDrift(ctx, log, drift, loaded);
    const neighboursAdded = await storeNeighbours(ctx, source, resource, rejectContext, items.others);
    if (neighbours !== undefined) source.neighbours?.remember(resource, neighbours.identities);
    logLoad(log, fetched, total, loaded);
    return loadedWindow(base, status, items, loaded, {
      neighboursAdded,
      truncated: fetched.truncated || lacking > 0,
      requests,
    });
  } catch (error) {
    return windowFailure(ctx, source, base, error, requests, log);
  }
}

/**
 * The warehouse did not take the day's answer as whole: it lacked items the run stored of the day
 * from another answer (a neighbour's, read here or by another worker), so the request no longer
 * holds all of the day (or the items went meanwhile). The day is flagged and reopened there
 * (store_window, migration 0053); here the reading is learned again and the days this writer
 * settled since its last proof are reopened, recorded now (a queued run's worker may have no next
 * window of the resource to record them with; the run's end records them otherwise).
 */
async function answerContradicted(
  ctx: SyncContext,
  source: SourceHandle,
  resource: WindowedResource,
  log: Logger,
  lacking: number,
): Promise<void> {
  const key = { sourceId: source.name, resource };
  const reopened = await relearnAndReopen(ctx.pool, key, source.knowledge[resource]).catch(() => 0);
  log.warn(
    { lacking, reopened },
    "the day's answer lacks items the run stored of it from another answer: not taken as whole, the day flagged and read again, the server reading learned again",
  );
}

/** The day's answers, held in the byte budget, validated, and let go of as parsed. */
async function validateFetched(
  fetched: FetchedDay,
  lease: WindowLease,
  source: SourceHandle,
  resource: WindowedResource,
) {
  await lease.holds(
    HELD_PER_JSON_BYTE * (approxJsonBytes(fetched.onDay) + approxJsonBytes(fetched.otherDays)),
  );
  const schema = windowedItemSchemas[resource];
  // Validated as served, then personal data hashed or dropped (the source's pii) before any write.
  const { valid, rejected } = protectPersonalData(validateItems(schema, fetched.onDay), source.pii);
  // Items of neighbouring days came along (bounds, server day): stored too, never counted here.
  const others = protectPersonalData(validateItems(schema, fetched.otherDays), source.pii);
  const total = fetched.onDay.length;
  // The answers as parsed are not needed past validation: the load holds the validated copies.
  fetched.onDay = [];
  fetched.otherDays = [];
  return { valid, rejected, others, total };
}

interface RejectContext {
  sourceId: string;
  resource: WindowedResource;
  day: DayString;
  runId: number | null;
}

/** A day failed on too many invalid items: its rejects and its failure, nothing of its items. */
async function recordInvalidDay(
  ctx: SyncContext,
  source: SourceHandle,
  rejectContext: RejectContext,
  rejected: Rejected[],
  error: string,
): Promise<void> {
  await inTransaction(ctx.pool, async (trx) => {
    await ensureSource(trx, source.name, source.baseUrl);
    await loadRejects(trx, rejectContext, await withoutForgotten(trx, source.name, rejected));
    await recordWindowFailure(trx, { ...rejectContext, error });
  });
}

/**
 * Items of neighbouring days: their own windows keep them current, so here they are only
 * added when missing. Apart from the window's transaction, which then never waits on a
 * neighbour's rows while holding its own (two such windows would deadlock).
 */
export async function storeNeighbours(
  ctx: Pick<SyncContext, 'pool'>,
  source: Pick<SourceHandle, 'name'>,
  resource: WindowedResource,
  rejectContext: RejectContext,
  others: Awaited<ReturnType<typeof validateFetched>>['others'],
): Promise<number> {
  if (others.valid.length === 0 && others.rejected.length === 0) return 0;
  // Without rejects, the items are one statement, a transaction by itself: no `begin`, no
  // `commit`. Most windows' answers reach into a neighbouring day (bounds, server day), so these
  // two round trips were a fifth of a window's statements in a queued backfill.
  if (others.rejected.length === 0) {
    const values = windowMergeValues(
      resource,
      source.name,
      others.valid,
      { mode: 'insert-missing' },
      NO_EXTRAS,
    );
    const [row] = await windowWritesOf(ctx.pool).run(others.valid.length, () =>
      inOneStatement<{ load: WindowLoad }>(ctx.pool, WINDOW_MERGE, values),
    );
    return row?.load.inserted ?? 0;
  }
  return inTransaction(ctx.pool, async (trx) => {
    const added = await loadWindowItems(trx, resource, source.name, others.valid, {
      mode: 'insert-missing',
    });
    for (const [otherDay, items] of byDay(others.rejected, rejectContext.day))
      await loadRejects(trx, { ...rejectContext, day: otherDay }, items);
    return added.inserted;
  });
}

/** A neighbour's items alone: no ledger row, no rejects, no source row to make (the window's made it). */
const NO_EXTRAS = { baseUrl: null, day: null, rejects: null, ledger: null };

type StoredWindow = Awaited<ReturnType<typeof storeWindow>>;

/**
 * Said of a day flagged truncated, both causes named as the run summary names them: the flag alone
 * does not tell which (an answer at the server's cap may be below the limit asked, as is one that
 * came back short under a reading that changed).
 */
export const TRUNCATED_DAY_LINE =
  'day possibly truncated: its answers stayed at the limit or the server cap, or came back short while the server changed how it answers';

/** The warning of a day flagged while the server changed how it answers (FetchedDay.readAgain). */
export const CHANGED_DAY_LINE =
  'day possibly truncated: its answers came back short or cut while the server changed how it answers; read again first, by this run or the next';

/** What the operator should hear of a stored window. */
export function logLoad(log: Logger, fetched: FetchedDay, total: number, loaded: StoredWindow): void {
  if (fetched.truncated)
    log.warn(
      { limit: fetched.requestedLimit, served: fetched.servedCount, items: total },
      fetched.readAgain ? CHANGED_DAY_LINE : TRUNCATED_DAY_LINE,
    );
  if (loaded.conflicts > 0)
    log.warn(
      { conflicts: loaded.conflicts },
      'items with the same key and different content in one response',
    );
  const collisions = loaded.collisions ?? 0;
  if (collisions > 0)
    log.warn(
      { collisions },
      'items whose key an item of another day holds: the later dt keeps the key, the other is kept in key_collisions',
    );
  if (loaded.missingUpstream > 0)
    log.warn(
      { missingUpstream: loaded.missingUpstream },
      'items no longer served by their day, on two runs in a row: marked missing_upstream_since, kept',
    );
  const moves = loaded.moves ?? 0;
  if (moves > 0)
    log.info(
      { moves },
      'items moved to another day: the version served now holds the key, the one left behind is kept in key_collisions',
    );
  if (loaded.suppressed > 0)
    log.info({ suppressed: loaded.suppressed }, 'items of forgotten visitors not stored (suppression list)');
  log.debug({ fetched: total, inserted: loaded.inserted, updated: loaded.updated }, 'window loaded');
}

/** The outcome of a window stored whole. */
export function loadedWindow(
  base: { source: string; resource: WindowedResource; day: DayString },
  status: 'done' | 'open',
  items: { total: number; rejected: readonly unknown[]; neighbours: number },
  loaded: StoredWindow,
  more: { neighboursAdded: number; truncated: boolean; requests: number },
): WindowOutcome {
  return {
    ...base,
    status,
    fetched: items.total,
    inserted: loaded.inserted,
    updated: loaded.updated,
    unchanged: loaded.unchanged,
    rejected: items.rejected.length,
    // The rest of fetched (ITEM_IDENTITY in outcomes.ts), and the neighbours apart from it.
    setAside: loaded.withheld ?? 0,
    duplicates: loaded.duplicates,
    suppressed: loaded.suppressed,
    neighbours: items.neighbours,
    neighboursAdded: more.neighboursAdded,
    truncated: more.truncated,
    conflicts: loaded.conflicts,
    collisions: loaded.collisions ?? 0,
    moves: loaded.moves ?? 0,
    missingUpstream: loaded.missingUpstream,
    requests: more.requests,
  };
}

/**
 * What a window that threw comes to: a rejected key fails the source, a shutdown skips the
 * window, a refused endpoint or anything else fails it (and its failure is recorded).
 */
export function failureKind(
  error: unknown,
  shuttingDown: boolean,
): 'rejected key' | 'shutdown' | 'refused' | 'failed' {
  if (error instanceof AuthError) return 'rejected key';
  if (error instanceof RequestAbortedError && shuttingDown) return 'shutdown';
  return error instanceof EndpointRefusedError ? 'refused' : 'failed';
}

async function windowFailure(
  ctx: SyncContext,
  source: SourceHandle,
  base: { source: string; resource: WindowedResource; day: DayString },
  error: unknown,
  requests: number,
  log: Logger,
): Promise<WindowOutcome> {
  const message = errorMessage(error);
  const kind = failureKind(error, ctx.signal?.aborted === true);
  // The whole source is unusable: nothing is written, the caller stops the source's windows.
  if (kind === 'rejected key') return failedWindow(base, requests, message, { fatal: true });
  // The database cannot take writes (a full disk): the run stops, and the ledger cannot say so either.
  const shortage = resourceShortage(error);
  if (shortage !== undefined) {
    log.error({ err: message }, 'window failed: the database cannot take writes; the run stops');
    return failedWindow(base, requests, message, { shortage });
  }
  if (kind === 'shutdown') {
    // Shutdown cut its requests short: nothing of it was written, the next run takes the day.
    log.info('window not finished: shutting down');
    return skippedWindow(base.source, base.resource, base.day, requests);
  }
  // A refused endpoint is logged once per source and resource by the run, not once per day.
  if (kind !== 'refused') log.warn({ err: message }, 'window failed');
  await inTransaction(ctx.pool, async (trx) => {
    // The client's base URL: a placeholder when the configured one is unusable (it may hold a password).
    await ensureSource(trx, source.name, source.client.baseUrl);
    await recordWindowFailure(trx, {
      sourceId: source.name,
      resource: base.resource,
      day: base.day,
      error: message,
      runId: ctx.runId,
    });
  }).catch((ledgerError: unknown) =>
    log.error({ err: errorMessage(ledgerError) }, 'could not record the failed window'),
  );
  return failedWindow(
    base,
    requests,
    message,
    error instanceof EndpointRefusedError ? { refused: error.status } : {},
  );
}

/**
 * The source's client, for one window: each request first reserves what its answer will hold in
 * the run's byte budget (src/sync/window-memory.ts), and its answer teaches the key's item size.
 */
function reservingClient(client: ApiClient, lease: WindowLease): ApiClient {
  return {
    ...client,
    async window(resource, query, context) {
      await lease.asks(query.limit);
      const items = await client.window(resource, query, context);
      lease.answered(items);
      return items;
    },
  };
}

/** Rejected items of other days, grouped by their own day (they all have a readable dt). */
function byDay(rejected: readonly Rejected[], fallback: DayString): Map<DayString, Rejected[]> {
  const groups = new Map<DayString, Rejected[]>();
  for (const reject of rejected) {
    const itemDayString = itemDay(reject.item) ?? fallback;
    groups.set(itemDayString, [...(groups.get(itemDayString) ?? []), reject]);
  }
  return groups;
}
