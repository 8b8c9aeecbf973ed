import { inOneStatement, inTransaction } from '../db/transaction.js';
import { errorMessage } from '../errors.js';
import {
  DRIFT_UPDATE,
  driftUpdateValues,
  recordWindowDrift,
  type WindowDrift,
} from '../load/schema-drift.js';
import type { Logger } from '../log/logger.js';
import type { SnapshotResource } from '../schemas/resource-names.js';
import { type WindowedResource, windowedItemSchemas } from '../schemas/resources.js';
import { countUnknownFields } from '../schemas/unknown-fields.js';
import type { DayString } from '../time/days.js';
import type { SyncContext } from './context.js';

type DriftContext = Pick<SyncContext, 'pool' | 'db' | 'runId' | 'now'>;

/**
 * What a window's items carry of fields the spec does not describe, for the inventory
 * (schema_drift). A window carrying none (nearly all) has its inventory updated by its own
 * statement, store_window() (migration 0047): give storeWindow `drift: { total }` when
 * driftInWindow() says so, and noteWindowDrift() after it.
 */
export function windowDrift(
  ctx: Pick<DriftContext, 'runId' | 'now'>,
  window: { sourceId: string; resource: WindowedResource; day: DayString; valid: readonly unknown[] },
): WindowDrift {
  return {
    sourceId: window.sourceId,
    resource: window.resource,
    day: window.day,
    runId: ctx.runId,
    total: window.valid.length,
    counts: countUnknownFields(windowedItemSchemas[window.resource], window.valid),
    seenAt: ctx.now(),
  };
}

/** The window's statement updates the inventory: it carries no field to insert (no turn to take). */
export function driftInWindow(drift: WindowDrift): boolean {
  return drift.counts.size === 0;
}

/**
 * After a window is stored: a failure of the inventory's update in its statement is said (it cost
 * a note, not the day); fields it carries go to the inventory in a short transaction of their own,
 * after the window's (the window's rows never wait on the pair's turn), and a field met for the
 * first time is said once, in one warn line per window.
 */
export async function noteWindowDrift(
  ctx: DriftContext,
  log: Logger,
  drift: WindowDrift,
  stored: { driftError?: string },
): Promise<void> {
  if (!driftInWindow(drift)) return record(ctx, log, drift);
  if (stored.driftError !== undefined) failed(log, stored.driftError);
}

/**
 * After a snapshot is stored: the same, for its items (`total` of them, read whole), on the run's
 * day. The caller counts (a test's variants are part of the test: countUnknownTestFields).
 */
export async function noteSnapshotDrift(
  ctx: DriftContext,
  log: Logger,
  snapshot: {
    sourceId: string;
    resource: SnapshotResource;
    day: DayString;
    total: number;
    counts: ReadonlyMap<string, number>;
  },
): Promise<void> {
  await record(ctx, log, { ...snapshot, runId: ctx.runId, seenAt: ctx.now() });
}

async function record(ctx: DriftContext, log: Logger, drift: WindowDrift): Promise<void> {
  try {
    // No unknown field: one UPDATE, no lock to hold, so no transaction of its own (a round trip
    // for begin, one for commit and a pooled connection less per window).
    // The common case, a window without unknown fields, is the update alone: a named statement.
    const firstSeen =
      drift.counts.size === 0
        ? await inOneStatement(ctx.pool, DRIFT_UPDATE, driftUpdateValues(drift)).then(() => [])
        : await inTransaction(ctx.pool, (trx) => recordWindowDrift(trx.db, drift));
    if (firstSeen.length > 0)
      log.warn(
        { fields: firstSeen },
        'new fields from the API that the spec does not describe: kept in raw, listed in schema_drift',
      );
  } catch (error) {
    failed(log, errorMessage(error));
  }
}

function failed(log: Logger, err: string): void {
  log.warn({ err }, 'could not update the inventory of unknown fields (schema_drift)');
}
