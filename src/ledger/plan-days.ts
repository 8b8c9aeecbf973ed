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
 * Of `days`, the items earlier runs stored of those they settled (done, whole or truncated): how
 * large the day's answer was, for the limit a run first asks it with (a hint, as emptyDays').
 */
export async function storedCounts(
  db: Kysely<Database>,
  sourceId: string,
  resource: WindowedResource,
  days: readonly DayString[],
): Promise<Map<DayString, number>> {
  const sorted = [...days].sort();
  const [from, to] = [sorted[0], sorted[sorted.length - 1]];
  if (from === undefined || to === undefined) return new Map();
  const rows = await db
    .selectFrom('sync_windows')
    .select(['day', 'item_count'])
    .where('source_id', '=', sourceId)
    .where('resource', '=', resource)
    .where('day', '>=', from)
    .where('day', '<=', to)
    .where('status', '=', 'done')
    .execute();
  return new Map(rows.map((row) => [row.day, row.item_count]));
}

/**
 * Of `days`, those an earlier run settled empty: done, whole, with no item stored or rejected, not
 * reopened since. A hint only: such a day is asked the widest request first (day-plan.ts,
 * emptyFirst), and settled on what this run's answers show, never on the ledger's word.
 */
export async function emptyDays(
  db: Kysely<Database>,
  sourceId: string,
  resource: WindowedResource,
  days: readonly DayString[],
): Promise<Set<DayString>> {
  const sorted = [...days].sort();
  const [first, last] = [sorted[0], sorted[sorted.length - 1]];
  if (first === undefined || last === undefined) return new Set();
  const rows = await db
    .selectFrom('sync_windows')
    .select('day')
    .where('source_id', '=', sourceId)
    .where('resource', '=', resource)
    .where('day', '>=', first)
    .where('day', '<=', last)
    .where('status', '=', 'done')
    .where('truncated', '=', false)
    .where('item_count', '=', 0)
    .where('rejected_count', '=', 0)
    .where('reopened_at', 'is', null)
    .execute();
  const planned = new Set(days);
  return new Set(rows.map((row) => row.day).filter((day) => planned.has(day)));
}
