/** The late-arrival counts in the database: what a run records, and what `status` reads. */
import { type Kysely, sql } from 'kysely';
import type { Database } from '../db/database.js';
import { windowedSpec } from '../load/windowed.js';
import { tableOf, WINDOWED_RESOURCES, type WindowedResource } from '../schemas/resource-names.js';
import {
  dayKey,
  LATE_PERIOD_DAYS,
  type LateArrival,
  type LateArrivalStatus,
  lookbackCovering,
  type NewOnDay,
} from './late-arrivals.js';

export interface DayRead {
  source: string;
  resource: WindowedResource;
  day: string;
}

/** Of the planned days, those the ledger holds as done: a new item found there arrived late. */
export async function daysReadBefore(db: Kysely<Database>, plans: readonly DayRead[]): Promise<DayRead[]> {
  if (plans.length === 0) return [];
  const { rows } = await sql<{ source_id: string; resource: WindowedResource; day: string }>`
    select w.source_id, w.resource, w.day::text as day
      from sync_windows w
      join unnest(${plans.map((p) => p.source)}::text[], ${plans.map((p) => p.resource)}::text[],
                  ${plans.map((p) => p.day)}::date[]) as p(source_id, resource, day)
        on w.source_id = p.source_id and w.resource = p.resource and w.day = p.day
     where w.status = 'done'`.execute(db);
  return rows.map((r) => ({ source: r.source_id, resource: r.resource, day: r.day }));
}

/**
 * Items of these days that the run stored new, whichever window stored them (an item of one day
 * may come in another day's answer), counted from the rows the run inserted. Rows a webhook
 * delivery made while the run went are not the API's late items.
 */
export async function newItemsOnDays(
  db: Kysely<Database>,
  runId: number,
  days: readonly DayRead[],
): Promise<NewOnDay[]> {
  const counts: NewOnDay[] = [];
  for (const resource of WINDOWED_RESOURCES) {
    const of = days.filter((d) => d.resource === resource);
    if (of.length === 0) continue;
    const table = tableOf(resource);
    // A table that webhooks write too says which rows came from the API.
    const fromApi = windowedSpec(resource).origin ? sql`t.origin <> 'webhook'` : sql`true`;
    const { rows } = await sql<{ source_id: string; day: string; items: number }>`
      select p.source_id, p.day::text as day, count(*)::int as items
        from unnest(${of.map((d) => d.source)}::text[], ${of.map((d) => d.day)}::date[]) as p(source_id, day)
        join ${sql.table(table)} t on t.source_id = p.source_id
         and t.dt >= (p.day::timestamp at time zone 'UTC') and t.dt < ((p.day + 1)::timestamp at time zone 'UTC')
       where t.first_seen_at >= (select started_at from sync_runs where run_id = ${runId}) and ${fromApi}
       group by p.source_id, p.day`.execute(db);
    for (const r of rows) counts.push({ source: r.source_id, resource, day: r.day, items: r.items });
  }
  return counts;
}

export async function recordLateArrivals(
  db: Kysely<Database>,
  runId: number,
  arrivals: readonly LateArrival[],
): Promise<void> {
  if (arrivals.length === 0) return;
  await db
    .insertInto('late_arrivals')
    .values(
      arrivals.map((a) => ({
        run_id: runId,
        source_id: a.source,
        resource: a.resource,
        day_age: a.dayAge,
        items: a.items,
      })),
    )
    .execute();
}

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
