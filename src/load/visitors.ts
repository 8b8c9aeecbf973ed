import { sql } from 'kysely';
import type { LoadTransaction } from '../db/transaction.js';
import type { Visitor } from '../schemas/visitor.js';
import { dedupeByKey } from './dedupe.js';
import type { StagedRows, UpsertCounts } from './upsert.js';

/**
 * Visitors (spec 2.6) come embedded in feedback items and survey answers, many times each, and
 * their attributes (landing_page, device, ...) change over time. A row holds the most recent
 * observation by the dt of the item that carried it (visitors.observed_at), whatever order the
 * windows commit in: a window loading an older day (a backfill, a slow concurrent window) never
 * replaces a newer copy. Two observations with the same dt: the larger JSON text (jsonb's own,
 * canonical rendering) wins, so the tie too is decided by content, not by timing.
 *
 * Webhook bodies carry no dt: their visitor only creates a row that does not exist yet
 * (observed_at null, below every API observation; src/load/webhook-items.ts).
 */

/** One visitor object and the dt of the item that carried it. */
export interface VisitorObservation {
  visitor: Visitor;
  /** ISO timestamp: the item's dt (spec 2.3, 2.4). */
  observedAt: string;
}

export interface VisitorLoad extends UpsertCounts {
  /** Visitors that came more than once in the batch with different content (counted once each). */
  conflicts: number;
}

/** A visitor as its row of `visitors`: the one mapping of visitor fields to columns. */
export function visitorRow(sourceId: string, v: Visitor) {
  return {
    source_id: sourceId,
    id: v.id,
    name: v.name,
    company: v.company,
    email: v.email,
    ip: v.ip,
    user_agent: v.user_agent,
    landing_page: v.landing_page,
    ref_page: v.ref_page,
    created_at: v.created_at,
    device: v.device,
    browser: v.browser,
    os: v.os,
    raw: JSON.stringify(v),
  };
}

type VisitorRow = ReturnType<typeof visitorRow> & { observed_at: string };

/** A visitor's columns in the visitors table, in the table's order: the API's loader and the webhooks' share them. */
export const VISITOR_COLUMNS = [
  'source_id',
  'id',
  'name',
  'company',
  'email',
  'ip',
  'user_agent',
  'landing_page',
  'ref_page',
  'created_at',
  'device',
  'browser',
  'os',
  'raw',
] as const satisfies readonly (keyof ReturnType<typeof visitorRow>)[];

const COLUMNS = [...VISITOR_COLUMNS, 'observed_at'] as const satisfies readonly (keyof VisitorRow)[];

/**
 * `a` (an incoming or staged row) is a more recent observation than `b` (the stored row): a later
 * observed_at, or the same one and a larger JSON text. Null (a webhook's copy) is below any time.
 */
const newer = (a: string, b: string) => sql`(${sql.ref(`${a}.observed_at`)} is not null and (
  ${sql.ref(`${b}.observed_at`)} is null
  or ${sql.ref(`${a}.observed_at`)} > ${sql.ref(`${b}.observed_at`)}
  or (${sql.ref(`${a}.observed_at`)} = ${sql.ref(`${b}.observed_at`)}
      and (${sql.ref(`${a}.raw`)}::text collate "C") > (${sql.ref(`${b}.raw`)}::text collate "C"))))`;

/** The visitor's columns as jsonb_to_record reads them from its object (types as in `visitors`). */
const FIELDS = sql.raw(
  COLUMNS.filter((c) => !['source_id', 'id', 'raw', 'observed_at'].includes(c))
    .map((c) => `${c} ${c === 'created_at' ? 'timestamptz' : 'text'}`)
    .join(', '),
);

/**
 * Upserts the visitors observed in one window's items, read from the items' staged rows (each
 * carries its visitor in raw, its id in visitor_id, its dt): per visitor the most recent
 * observation of the batch, written only where it is more recent than the stored row. One
 * statement, in key order (concurrent windows lock shared visitors in one order and cannot
 * deadlock). `observations` are the same items' visitors, for the counts.
 */
export async function loadVisitors(
  trx: LoadTransaction,
  staged: StagedRows,
  observations: readonly VisitorObservation[],
): Promise<VisitorLoad> {
  if (observations.length === 0 || staged.count === 0)
    return { inserted: 0, updated: 0, unchanged: 0, conflicts: 0 };
  const { conflicts } = dedupeByKey(
    observations.map((o) => o.visitor),
    (v) => v.id,
  );
  const columns = sql.join(COLUMNS.map((c) => sql.id(c)));
  const updates = sql.join(
    COLUMNS.filter((c) => c !== 'source_id' && c !== 'id').map(
      (c) => sql`${sql.id(c)} = excluded.${sql.id(c)}`,
    ),
  );
  const result = await sql<{ inserted: number; updated: number }>`
    with timed as (
      select x.source_id, x.visitor_id, x.dt, x.raw,
             max(x.dt) over (partition by x.source_id, x.visitor_id) as latest_dt
        from ${sql.id(staged.stage)} x
       where x.visitor_id is not null
    ), latest as (
      -- The batch's most recent observation of each visitor, by the same rule as the upsert. Only
      -- the observations at a visitor's latest dt are rendered as text for the tie: a busy day's
      -- 10,000 items name a few hundred visitors.
      select distinct on (r.source_id, r.visitor_id) r.source_id, r.visitor_id as id,
             r.raw -> 'visitor' as raw, r.dt as observed_at
        from timed r
       where r.dt is not distinct from r.latest_dt
       order by r.source_id, r.visitor_id, ((r.raw -> 'visitor')::text collate "C") desc
    ), observed as (
      select l.*, f.* from latest l, jsonb_to_record(l.raw) as f(${FIELDS})
    ), written as (
      insert into visitors as t (${columns})
      select ${sql.join(COLUMNS.map((c) => sql.ref(`s.${c}`)))} from observed s
      -- A stored row as recent is left alone before the upsert: ON CONFLICT ... WHERE would
      -- still lock it and write WAL.
      where not exists (select 1 from visitors v
                         where v.source_id = s.source_id and v.id = s.id and not ${newer('s', 'v')})
      order by s.source_id, s.id
      on conflict (source_id, id) do update set ${updates},
        last_changed_at = case when t.raw is distinct from excluded.raw then now() else t.last_changed_at end
      -- Decided again on the row as committed: a concurrent window may have written a newer one.
      where ${newer('excluded', 't')}
      returning (xmax = 0) as is_insert, last_changed_at = now() as changed
    )
    select count(*) filter (where is_insert)::int as inserted,
           count(*) filter (where not is_insert and changed)::int as updated
    from written`.execute(trx.db);
  const counts = result.rows[0] ?? { inserted: 0, updated: 0 };
  const visitors = new Set(observations.map((o) => o.visitor.id)).size;
  // A row whose observed_at moved forward with the same content counts as unchanged.
  return { ...counts, unchanged: visitors - counts.inserted - counts.updated, conflicts };
}

/**
 * Deletes, of `visitorIds`, the visitor rows only webhooks created (observed_at null) that no
 * feedback or survey answer references: a webhook's visitor the API contradicted (found by the
 * upsert, StagedUpsert.contradicted in src/load/upsert.ts), which would
 * otherwise inflate visitor counts. A visitor the API has observed is kept (it is a real one).
 * Returns the ids deleted.
 */
export async function removeOrphanVisitors(
  trx: LoadTransaction,
  sourceId: string,
  visitorIds: readonly string[],
): Promise<string[]> {
  if (visitorIds.length === 0) return [];
  const deleted = await trx.db
    .deleteFrom('visitors as v')
    .where('v.source_id', '=', sourceId)
    // One array parameter, not one per id: the list may be as long as the window.
    .where(sql<boolean>`v.id = any(${[...visitorIds]}::text[])`)
    .where('v.observed_at', 'is', null)
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('feedback as f')
            .select(sql`1`.as('one'))
            .whereRef('f.source_id', '=', 'v.source_id')
            .whereRef('f.visitor_id', '=', 'v.id'),
        ),
      ),
    )
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('survey_answers as a')
            .select(sql`1`.as('one'))
            .whereRef('a.source_id', '=', 'v.source_id')
            .whereRef('a.visitor_id', '=', 'v.id'),
        ),
      ),
    )
    .returning('v.id')
    .execute();
  return deleted.map((row) => row.id);
}
