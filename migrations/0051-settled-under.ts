import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import { replaceInFunction, storeWindow } from './0050-caps-shared-by-workers.js';

/**
 * A queued run's last proof must judge every day the run settled against the reading its workers
 * learned by the end, whichever worker settled it. A rolling deploy that moved the server's day
 * let a worker settle a day on a request that, under the reading the new deploy's answers taught
 * later, never held the day's last hours: the worker had learned the reading afresh since, so it
 * judged the day no more, and the planner did not know the request.
 * - sync_windows.settled_from, settled_to: the request (startdate, enddate) the day was settled
 *   on, where its own answer settled it; null where a wide request that holds it under any reading
 *   vouched for it, or it was flagged, or written before this migration.
 * store_window() writes them from its ledger argument: its ledger statement, as migration 0050 left
 * it, is edited in the function's definition (as 0050 did). Frozen once shipped.
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

/** The ledger statement's parts, as 0050 left them, and what each becomes. */
const LEDGER = [
  {
    from: 'uncapped_served, truncated,',
    to: 'uncapped_served, settled_from, settled_to, truncated,',
  },
  {
    from: "(p_ledger ->> 'uncapped_served')::integer,\n",
    to: "(p_ledger ->> 'uncapped_served')::integer,\n            (p_ledger ->> 'settled_from')::date, (p_ledger ->> 'settled_to')::date,\n",
  },
  {
    from: '      uncapped_served = excluded.uncapped_served,\n',
    to: '      uncapped_served = excluded.uncapped_served,\n      settled_from = excluded.settled_from,\n      settled_to = excluded.settled_to,\n',
  },
];

const COMMENTS: Record<string, string> = {
  'sync_windows.settled_from':
    "The request's startdate the day was settled on, where its own answer settled it. A queued run's last proof reads again a day of the run whose request the reading learned by then says misses part of it. Null: vouched for by a wider request, flagged, or written before migration 0051.",
  'sync_windows.settled_to': "The request's enddate the day was settled on (see settled_from).",
};

export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .alterTable('sync_windows')
    .addColumn('settled_from', 'date')
    .addColumn('settled_to', 'date')
    .execute();
  for (const [column, comment] of Object.entries(COMMENTS))
    await sql`comment on column ${sql.ref(column)} is ${sql.lit(comment)}`.execute(db);
  await replaceInFunction(db, await storeWindow(db), LEDGER);
}

export async function down(db: AnyDb): Promise<void> {
  await replaceInFunction(
    db,
    await storeWindow(db),
    LEDGER.map((s) => ({ from: s.to, to: s.from })),
  );
  await db.schema.alterTable('sync_windows').dropColumn('settled_to').dropColumn('settled_from').execute();
}
