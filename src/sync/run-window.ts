import { RequestAbortedError } from '../api/abort.js';
import { AuthError, errorMessage } from '../errors.js';
import type { DayString } from '../extract/days.js';
import { fetchDay } from '../extract/fetch-day.js';
import { validateItems } from '../extract/validate.js';
import { recordWindow, recordWindowFailure } from '../load/ledger.js';
import { loadRejects } from '../load/rejects.js';
import { ensureSource } from '../load/sources.js';
import { inTransaction } from '../load/transaction.js';
import { loadWindowItems } from '../load/windowed.js';
import { protectPersonalData } from '../privacy/pii.js';
import { type WindowedResource, windowedItemSchemas } from '../schemas/resources.js';
import { advanceWatermark } from '../watermark/watermark.js';
import type { SourceHandle, SyncContext } from './context.js';
import { noCounts, type WindowOutcome } from './outcomes.js';

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
  plan: { today: DayString; startDay: DayString },
): Promise<WindowOutcome> {
  const { today, startDay } = plan;
  const base = { source: source.name, resource, day };
  const log = ctx.logger.child({ source: source.name, resource, day });
  let requests = 0;
  try {
    const fetched = await fetchDay(source.client, resource, day, ctx.limits, source.serverCap);
    requests = fetched.requests;
    // Validated as served, then personal data hashed or dropped (the source's pii) before any write.
    const { valid, rejected } = protectPersonalData(
      validateItems(windowedItemSchemas[resource], fetched.items),
      source.pii,
    );
    const total = fetched.items.length;
    const invalidShare = total === 0 ? 0 : rejected.length / total;
    const rejectContext = { sourceId: source.name, resource, day, runId: ctx.runId };

    if (rejected.length > 0 && invalidShare > ctx.maxInvalidShare) {
      const error = `${rejected.length} of ${total} items invalid (${pct(invalidShare)}, above the ${pct(ctx.maxInvalidShare)} allowed by INSIGHTS_MAX_INVALID_SHARE); first: ${rejected[0]?.error ?? ''}`;
      await inTransaction(ctx.pool, async (trx) => {
        await ensureSource(trx, source.name, source.baseUrl);
        await loadRejects(trx, rejectContext, rejected);
        await recordWindowFailure(trx, { sourceId: source.name, resource, day, error, runId: ctx.runId });
      });
      log.warn({ rejected: rejected.length, total }, 'window failed: too many invalid items');
      return {
        ...base,
        ...noCounts(),
        truncated: false,
        status: 'failed',
        fetched: total,
        rejected: rejected.length,
        requests,
        error,
      };
    }

    const status = day < today ? 'done' : 'open';
    const loaded = await inTransaction(ctx.pool, async (trx) => {
      await ensureSource(trx, source.name, source.baseUrl);
      const counts = await loadWindowItems(trx, resource, source.name, valid);
      await loadRejects(trx, rejectContext, rejected);
      await recordWindow(trx, {
        sourceId: source.name,
        resource,
        day,
        status,
        itemCount: valid.length,
        requestedLimit: fetched.requestedLimit,
        truncated: fetched.truncated,
        rejectedCount: rejected.length,
        runId: ctx.runId,
      });
      if (status === 'done') await advanceWatermark(trx.db, source.name, resource, startDay, today);
      return counts;
    });
    if (fetched.truncated)
      log.warn(
        { limit: fetched.requestedLimit, items: total },
        'day may be truncated: the response stayed saturated',
      );
    if (loaded.conflicts > 0)
      log.warn(
        { conflicts: loaded.conflicts },
        'items with the same key and different content in one response',
      );
    log.debug({ fetched: total, inserted: loaded.inserted, updated: loaded.updated }, 'window loaded');
    return {
      ...base,
      status,
      fetched: total,
      inserted: loaded.inserted,
      updated: loaded.updated,
      unchanged: loaded.unchanged,
      rejected: rejected.length,
      truncated: fetched.truncated,
      conflicts: loaded.conflicts,
      requests,
    };
  } catch (error) {
    const message = errorMessage(error);
    if (error instanceof AuthError) {
      // The whole source is unusable: nothing is written, the caller stops the source's windows.
      return {
        ...base,
        ...noCounts(),
        truncated: false,
        status: 'failed',
        requests,
        error: message,
        fatal: true,
      };
    }
    if (error instanceof RequestAbortedError && ctx.signal?.aborted) {
      // Shutdown cut its requests short: nothing of it was written, the next run takes the day.
      log.info('window not finished: shutting down');
      return { ...base, ...noCounts(), truncated: false, status: 'skipped', requests };
    }
    log.warn({ err: message }, 'window failed');
    await inTransaction(ctx.pool, async (trx) => {
      await ensureSource(trx, source.name, source.baseUrl);
      await recordWindowFailure(trx, {
        sourceId: source.name,
        resource,
        day,
        error: message,
        runId: ctx.runId,
      });
    }).catch((ledgerError: unknown) =>
      log.error({ err: errorMessage(ledgerError) }, 'could not record the failed window'),
    );
    return { ...base, ...noCounts(), truncated: false, status: 'failed', requests, error: message };
  }
}

function pct(share: number): string {
  return `${(share * 100).toFixed(share < 0.1 ? 1 : 0)}%`;
}
