import { RequestAbortedError } from '../api/abort.js';
import { AuthError, errorMessage } from '../errors.js';
import type { DayString } from '../extract/days.js';
import { validateItems } from '../extract/validate.js';
import { loadRejects } from '../load/rejects.js';
import { loadHeatmaps, loadTestResults, loadTests, type SnapshotLoad } from '../load/snapshots.js';
import { ensureSource } from '../load/sources.js';
import { inTransaction } from '../load/transaction.js';
import { heatmapSchema } from '../schemas/heatmap.js';
import { type TestKind, type TestResult, testResultSchema, testSchema } from '../schemas/test.js';
import type { SourceHandle, SyncContext } from './context.js';
import { type SnapshotOutcome, unwrittenSnapshot } from './outcomes.js';

/**
 * Snapshots one kind of test: the list, then every listed test's per-variant results, loaded
 * in one transaction. A list with invalid items is not complete (an unreadable item's id is
 * unknown), so nothing is marked removed from it.
 */
export async function snapshotTests(
  ctx: SyncContext,
  source: SourceHandle,
  kind: TestKind,
  today: DayString,
): Promise<SnapshotOutcome> {
  const base = { source: source.name, resource: kind } as const;
  try {
    const list = validateItems(testSchema, await source.client.listTests(kind));
    const details = await Promise.all(
      list.valid.map(async (test) => {
        try {
          return {
            id: test.id,
            ...validateItems(testResultSchema, await source.client.testResults(kind, test.id)),
          };
        } catch (error) {
          // A rejected key fails the source; a shutdown skips the whole snapshot.
          if (error instanceof AuthError || error instanceof RequestAbortedError) throw error;
          return { id: test.id, valid: [] as TestResult[], rejected: [], error: errorMessage(error) };
        }
      }),
    );
    const failedDetails = details.flatMap((d) => ('error' in d ? [`${d.id}: ${d.error}`] : []));
    const totals = await inTransaction(ctx.pool, async (trx) => {
      await ensureSource(trx, source.name, source.baseUrl);
      const rejectContext = { sourceId: source.name, resource: kind, day: null, runId: ctx.runId };
      await loadRejects(trx, rejectContext, list.rejected);
      const loads: SnapshotLoad[] = [
        await loadTests(trx, kind, source.name, list.valid, list.rejected.length === 0),
      ];
      for (const detail of details) {
        if ('error' in detail) continue;
        await loadRejects(trx, { ...rejectContext, resource: `${kind}/detail` }, detail.rejected);
        loads.push(await loadTestResults(trx, kind, source.name, detail.id, detail.valid, today));
      }
      return sum(loads);
    });
    const rejected = list.rejected.length + details.reduce((n, d) => n + d.rejected.length, 0);
    const fetched =
      list.valid.length +
      list.rejected.length +
      details.reduce((n, d) => n + d.valid.length + d.rejected.length, 0);
    const outcome: SnapshotOutcome = {
      ...base,
      status: failedDetails.length > 0 ? 'failed' : 'done',
      ...totals,
      fetched,
      rejected,
    };
    if (failedDetails.length > 0) outcome.error = `results not fetched for ${failedDetails.join('; ')}`;
    return outcome;
  } catch (error) {
    return failed(base, error, ctx.signal);
  }
}

export async function snapshotHeatmaps(ctx: SyncContext, source: SourceHandle): Promise<SnapshotOutcome> {
  const base = { source: source.name, resource: 'heatmaps' } as const;
  try {
    const { valid, rejected } = validateItems(heatmapSchema, await source.client.heatmaps());
    const load = await inTransaction(ctx.pool, async (trx) => {
      await ensureSource(trx, source.name, source.baseUrl);
      await loadRejects(
        trx,
        { sourceId: source.name, resource: 'heatmaps', day: null, runId: ctx.runId },
        rejected,
      );
      return loadHeatmaps(trx, source.name, valid, rejected.length === 0);
    });
    return {
      ...base,
      status: 'done',
      ...load,
      fetched: valid.length + rejected.length,
      rejected: rejected.length,
    };
  } catch (error) {
    return failed(base, error, ctx.signal);
  }
}

function failed(
  base: Pick<SnapshotOutcome, 'source' | 'resource'>,
  error: unknown,
  signal: AbortSignal | undefined,
): SnapshotOutcome {
  // Shutdown cut its requests short: nothing was written, which is a skip, not a failure.
  const skipped = error instanceof RequestAbortedError && signal?.aborted === true;
  const outcome = unwrittenSnapshot(base.source, base.resource, skipped ? 'skipped' : 'failed');
  if (!skipped) outcome.error = errorMessage(error);
  if (error instanceof AuthError) outcome.fatal = true;
  return outcome;
}

function sum(loads: readonly SnapshotLoad[]): SnapshotLoad {
  return loads.reduce(
    (acc, l) => ({
      inserted: acc.inserted + l.inserted,
      updated: acc.updated + l.updated,
      unchanged: acc.unchanged + l.unchanged,
      removed: acc.removed + l.removed,
      conflicts: acc.conflicts + l.conflicts,
    }),
    { inserted: 0, updated: 0, unchanged: 0, removed: 0, conflicts: 0 },
  );
}
