/** The late-arrival counts a run records (src/status/late-arrival-status.ts reads them for `status`). */
import { type Kysely, sql } from 'kysely';
import type { Database } from '../db/database.js';
import type { DayRead } from '../ledger/read.js';
import { windowedSpec } from '../load/windowed.js';
import { tableOf, WINDOWED_RESOURCES } from '../schemas/resource-names.js';
import type { LateArrival, NewOnDay } from './late-arrivals.js';

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
