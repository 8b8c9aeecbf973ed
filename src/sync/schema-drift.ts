import { inTransaction } from '../db/transaction.js';
import { errorMessage } from '../errors.js';
import { recordWindowDrift } from '../load/schema-drift.js';
import type { Logger } from '../log/logger.js';
import { type WindowedResource, windowedItemSchemas } from '../schemas/resources.js';
import { countUnknownFields } from '../schemas/unknown-fields.js';
import type { DayString } from '../time/days.js';
import type { SyncContext } from './context.js';

/**
 * After a window is stored: its items' fields the spec does not describe go to the inventory
 * (schema_drift), and a field met for the first time is said once, in one warn line per window.
 * Its own short transaction, after the window's: the window's rows never wait on it, and a
 * failure here costs a note, not the day.
 */
export async function noteSchemaDrift(
  ctx: Pick<SyncContext, 'pool' | 'db' | 'runId' | 'now'>,
  log: Logger,
  window: { sourceId: string; resource: WindowedResource; day: DayString; valid: readonly unknown[] },
): Promise<void> {
  const counts = countUnknownFields(windowedItemSchemas[window.resource], window.valid);
  const drift = {
    sourceId: window.sourceId,
    resource: window.resource,
    day: window.day,
    runId: ctx.runId,
    total: window.valid.length,
    counts,
    seenAt: ctx.now(),
  };
  try {
    // No unknown field: one UPDATE, no lock to hold, so no transaction of its own (a round trip
    // for begin, one for commit and a pooled connection less per window).
    const firstSeen =
      counts.size === 0
        ? await recordWindowDrift(ctx.db, drift)
        : await inTransaction(ctx.pool, (trx) => recordWindowDrift(trx.db, drift));
    if (firstSeen.length > 0)
      log.warn(
        { fields: firstSeen },
        'new fields from the API that the spec does not describe: kept in raw, listed in schema_drift',
      );
  } catch (error) {
    log.warn({ err: errorMessage(error) }, 'could not update the inventory of unknown fields (schema_drift)');
  }
}
