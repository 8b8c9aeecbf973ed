import { type Kysely, sql } from 'kysely';
import type { Config } from '../config/config.js';
import type { Database } from '../db/database.js';
import type { WindowedResource } from '../schemas/resources.js';
import type { DayString } from '../time/days.js';
import { planBackfillDays, planSyncDays } from './plan.js';
import { readWatermark } from './watermark.js';

export type DayPlanSettings = Pick<Config, 'startDate' | 'lookbackDays' | 'maxLimit'>;

/**
 * The days one source and resource reads in a run, from its watermark and ledger rows: a
 * backfill's range whole, a sync's open days, lookback and truncated days that can be read further
 * (plan.ts decides; this reads what it decides from). startDay is where the watermark's run of
 * done days starts.
 */
export async function planDays(
  db: Kysely<Database>,
  settings: DayPlanSettings,
  sourceId: string,
  resource: WindowedResource,
  range: { from: DayString; to: DayString } | undefined,
  today: DayString,
): Promise<{ days: DayString[]; startDay: DayString }> {
  const mark = await readWatermark(db, sourceId, resource);
  if (range) {
    return {
      days: planBackfillDays(range.from, range.to, today),
      startDay: mark?.startDay ?? range.from,
    };
  }
  const startDay = mark?.startDay ?? settings.startDate;
  const after = mark?.day ?? startDay;
  const doneRows = await db
    .selectFrom('sync_windows')
    .select('day')
    .where('source_id', '=', sourceId)
    .where('resource', '=', resource)
    .where('status', '=', 'done')
    .where('day', '>=', after)
    .execute();
  const days = planSyncDays({
    today,
    watermark: mark?.day ?? null,
    startDay,
    doneDays: new Set(doneRows.map((r) => r.day)),
    lookbackDays: settings.lookbackDays,
    readFurther: new Set([
      ...(await readableFurther(db, settings.maxLimit, sourceId, resource)),
      ...(await reopenedDays(db, sourceId, resource)),
    ]),
  });
  return { days, startDay };
}

/**
 * Truncated days that a new run can read further: the server has since served more in one
 * response than they got, or the day filled our limit and INSIGHTS_MAX_LIMIT has been raised.
 * The most recent truncated day is read again every run: that is how a raised server cap is
 * seen (it comes back fuller, which raises largest_response for the next run). Other truncated
 * days are not asked again: the server would cut them the same way.
 */
async function readableFurther(
  db: Kysely<Database>,
  maxLimit: number,
  sourceId: string,
  resource: WindowedResource,
): Promise<DayString[]> {
  const truncated = db
    .selectFrom('sync_windows as w')
    .where('w.source_id', '=', sourceId)
    .where('w.resource', '=', resource)
    .where('w.truncated', '=', true);
  const rows = await truncated
    .leftJoin('server_readings as r', (join) =>
      join.onRef('r.source_id', '=', 'w.source_id').onRef('r.resource', '=', 'w.resource'),
    )
    .select('w.day')
    .where((eb) =>
      eb.or([
        eb(
          sql<number>`coalesce(w.served_count, w.item_count)`,
          '<',
          sql<number>`coalesce(r.largest_response, 0)`,
        ),
        eb.and([
          eb(sql<number>`coalesce(w.served_count, w.item_count)`, '>=', eb.ref('w.requested_limit')),
          eb('w.requested_limit', '<', maxLimit),
        ]),
      ]),
    )
    .execute();
  const latest = await truncated.select(sql<DayString | null>`max(w.day)::text`.as('day')).executeTakeFirst();
  return [...rows.map((r) => r.day), ...(latest?.day ? [latest.day] : [])];
}

/**
 * Days a proof reopened (the server reading they were settled under proved stale) that no run has
 * read again yet: read first, whatever the watermark.
 */
async function reopenedDays(
  db: Kysely<Database>,
  sourceId: string,
  resource: WindowedResource,
): Promise<DayString[]> {
  const rows = await db
    .selectFrom('sync_windows')
    .select('day')
    .where('source_id', '=', sourceId)
    .where('resource', '=', resource)
    .where('reopened_at', 'is not', null)
    .execute();
  return rows.map((row) => row.day);
}

/**
 * What earlier runs left in the ledger of `days`, hints for how a run first asks them (never a
 * verdict: the run settles each day on its own answers):
 * - empty: days settled empty (done, whole, no item stored or rejected, not reopened since), asked
 *   the widest request first (day-plan.ts, emptyFirst);
 * - counts: the items stored of each day settled (done, whole or truncated), for the limit it is
 *   first asked with (limit-steps.ts, hintedStartLimit).
 */
export async function daysBefore(
  db: Kysely<Database>,
  sourceId: string,
  resource: WindowedResource,
  days: readonly DayString[],
): Promise<{ empty: Set<DayString>; counts: Map<DayString, number> }> {
  const empty = new Set<DayString>();
  const counts = new Map<DayString, number>();
  const sorted = [...days].sort();
  const [first, last] = [sorted[0], sorted[sorted.length - 1]];
  if (first === undefined || last === undefined) return { empty, counts };
  const rows = await db
    .selectFrom('sync_windows')
    .select(['day', 'item_count', 'truncated', 'rejected_count', 'reopened_at'])
    .where('source_id', '=', sourceId)
    .where('resource', '=', resource)
    .where('day', '>=', first)
    .where('day', '<=', last)
    .where('status', '=', 'done')
    .execute();
  const planned = new Set(days);
  for (const row of rows) {
    if (!planned.has(row.day)) continue;
    counts.set(row.day, row.item_count);
    if (!row.truncated && row.item_count === 0 && row.rejected_count === 0 && row.reopened_at === null)
      empty.add(row.day);
  }
  return { empty, counts };
}
