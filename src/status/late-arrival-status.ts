import { type Kysely, sql } from 'kysely';
import type { Database } from '../db/database.js';
import { dayKey, LATE_PERIOD_DAYS, type LateArrivalStatus, lookbackCovering } from '../sync/late-arrivals.js';

/** What `status` shows of late data: the late-arrival counts runs recorded over the last LATE_PERIOD_DAYS. */
export async function lateArrivalStatus(
  db: Kysely<Database>,
  lookbackDays: number,
  now: Date,
): Promise<LateArrivalStatus[]> {
  const since = new Date(now.getTime() - LATE_PERIOD_DAYS * 86_400_000);
  const rows = await db
    .selectFrom('late_arrivals')
    .select(['source_id', 'resource', 'day_age', sql<number>`sum(items)::int`.as('items')])
    .where('recorded_at', '>=', since)
    .groupBy(['source_id', 'resource', 'day_age'])
    .orderBy('source_id')
    .orderBy('resource')
    .orderBy('day_age')
    .execute();
  const bySeries = new Map<string, LateArrivalStatus>();
  for (const row of rows) {
    const id = dayKey(row.source_id, row.resource, '');
    const series = bySeries.get(id) ?? {
      source: row.source_id,
      resource: row.resource,
      items: 0,
      byAge: [],
      lookbackCovering: null,
      lookbackDays,
      atTheEdge: 0,
    };
    series.items += row.items;
    series.byAge.push({ dayAge: row.day_age, items: row.items });
    if (row.day_age >= lookbackDays) series.atTheEdge += row.items;
    bySeries.set(id, series);
  }
  return [...bySeries.values()].map((s) => ({ ...s, lookbackCovering: lookbackCovering(s.byAge) }));
}
