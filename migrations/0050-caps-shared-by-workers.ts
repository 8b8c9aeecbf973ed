import { type Kysely, sql } from 'kysely';

/**
 * A cap lowered during a queued run (a deploy: from 100 to 60) must reach every day the run
 * settled at the new cap, whichever worker read it. An in-process run's windows share one session
 * per resource and read again, at its end, the days settled at a size a cap proved later in the
 * run may have cut; a worker knew only the caps it proved itself, and its days were gone from
 * every session once it moved on: 60 of 72 items of a day stayed recorded whole.
 * - queue_run_checks.caps: the caps (and sizes suspected of being caps) the run's workers know,
 *   told by each as it learns one and heard by the others with the next slot they claim.
 * - sync_windows.uncapped_served: a day settled at a size no cap its reader knew covered, that
 *   size. The queued run's last proof reads again the days of the run whose size is a cap the
 *   run knows by then (src/sync/queue-proof.ts); a day read knowing the cap records null.
 * store_window() writes it from its ledger argument: its ledger statement, found exactly as
 * migration 0041 wrote it, is replaced in the function's definition (as 0047 did). Frozen once
 * shipped.
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

const STORE_TYPES = '(text, text, text, date, jsonb, boolean, text, bigint, jsonb, jsonb)';

/** The ledger statement's parts, as 0041 wrote them, and what each becomes. */
const LEDGER = [
  {
    from: 'served_count,\n                                   truncated,',
    to: 'served_count,\n                                   uncapped_served, truncated,',
  },
  {
    from: "(p_ledger ->> 'served_count')::integer,\n",
    to: "(p_ledger ->> 'served_count')::integer, (p_ledger ->> 'uncapped_served')::integer,\n",
  },
  {
    from: 'served_count = excluded.served_count,\n',
    to: 'served_count = excluded.served_count,\n      uncapped_served = excluded.uncapped_served,\n',
  },
];

const COMMENTS: Record<string, string> = {
  'sync_windows.uncapped_served':
    'Most items one answer for the day held, when the day was settled at a size no server cap its reader knew could have cut. A cap proved later at that size means the day may be short: it is read again. Null: settled knowing the cap, flagged, or written before migration 0050.',
  'queue_run_checks.caps':
    "Sizes the run's workers know answers of this source may be cut at (server caps proved, or suspected when days settled at one size again and again): an answer of exactly such a size is checked, never settled as whole.",
};

export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable('sync_windows').addColumn('uncapped_served', 'integer').execute();
  await db.schema
    .alterTable('queue_run_checks')
    .addColumn('caps', sql`integer[]`, (c) => c.notNull().defaultTo(sql`'{}'`))
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
  await db.schema.alterTable('queue_run_checks').dropColumn('caps').execute();
  await db.schema.alterTable('sync_windows').dropColumn('uncapped_served').execute();
}

/**
 * Redefines the function with each `from` (found exactly once in its definition) replaced by its
 * `to`. Used by later migrations that edit store_window() the same way.
 */
export async function replaceInFunction(
  db: AnyDb,
  signature: string,
  replacements: readonly { from: string; to: string }[],
): Promise<void> {
  const { rows } = await sql<{ def: string }>`
    select pg_get_functiondef(${signature}::regprocedure) as def`.execute(db);
  let def = rows[0]?.def ?? '';
  for (const { from, to } of replacements) {
    const found = def.split(from).length - 1;
    if (found !== 1)
      throw new Error(`${signature}: the statement to replace is found ${found} times instead of once`);
    def = def.replace(from, () => to);
  }
  await sql.raw(def).execute(db);
}

/** store_window()'s signature in the bookkeeping schema beside the connection's data schema. */
export async function storeWindow(db: AnyDb): Promise<string> {
  const { rows } = await sql<{ data: string }>`select current_schema() as data`.execute(db);
  const data = rows[0]?.data;
  if (data === undefined) throw new Error('no current schema: the connection has no search_path');
  return `"${`${data}_state`.replaceAll('"', '""')}".store_window${STORE_TYPES}`;
}
