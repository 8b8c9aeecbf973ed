import { CompiledQuery, type Kysely, sql } from 'kysely';
import type { Database } from '../db/database.js';
import { preparedStatement } from '../db/transaction.js';
import type { Resource } from '../schemas/resource-names.js';
import type { DayString } from '../time/days.js';

/**
 * What one window's load (or one snapshot's: its run's day, all its items) saw of fields the spec
 * does not describe.
 */
export interface WindowDrift {
  sourceId: string;
  resource: Resource;
  day: DayString;
  runId: number | null;
  /** Items the window loaded. */
  total: number;
  /** Per unknown field path, how many of those items carried it. */
  counts: ReadonlyMap<string, number>;
  seenAt: Date;
}

/**
 * Keeps the inventory (schema_drift, migration 0027) up to date with one window and returns the
 * field paths it met for the first time, sorted. Every field of the source and resource tracks
 * the run that last loaded any window of it: a field a run's windows no longer carry falls to a
 * share of 0 in that run. Windows of one source and resource run in parallel: the pair's turn (a
 * row lock, takeTurn) makes the windows that insert fields go one at a time (one short statement
 * each) instead of counting each other's items twice or deadlocking on the rows. Run it in a transaction when
 * `counts` is not empty (the lock is held until commit); without, a statement of its own will do.
 */
export async function recordWindowDrift(db: Kysely<Database>, drift: WindowDrift): Promise<string[]> {
  const { sourceId, resource, runId, seenAt } = drift;
  const paths = [...drift.counts.keys()].sort();
  // Without fields to insert, the UPDATE alone needs no turn: its row locks order it against the
  // others, and READ COMMITTED re-reads a row another window updated meanwhile. Rows another
  // window is inserting now are not seen: as if this window had taken its turn first. A window
  // without unknown fields (nearly all of them) is then one statement in its own transaction.
  if (paths.length > 0) await takeTurn(db, sourceId, resource);
  const inserted =
    paths.length === 0
      ? []
      : (
          await sql<{ field_path: string }>`
            insert into schema_drift (source_id, resource, field_path, first_seen_at, first_seen_day,
                                      last_seen_at, last_run_id, last_run_items, last_run_total)
            select ${sourceId}, ${resource}, f.field_path, ${seenAt}::timestamptz, ${drift.day}::date,
                   ${seenAt}::timestamptz, ${runId}::bigint, 0, 0
              from unnest(${sql.val(paths)}::text[]) as f(field_path)
            on conflict (source_id, resource, field_path) do nothing
            returning field_path`.execute(db)
        ).rows;
  await db.executeQuery(CompiledQuery.raw(DRIFT_UPDATE, driftUpdateValues(drift)));
  return inserted.map((r) => r.field_path).sort();
}

/**
 * The inventory's update for one window: every field of the source and resource counts the
 * window's items (those carrying it) and total in the run's figures. Its text is the same for
 * every window (the fields go as arrays): compiled once, and prepared once per connection where
 * it is sent as a named statement. `carried` is the window's count of the row's field, null for
 * a field it lacks.
 */
const CARRIED = `(select f.n from unnest($4::text[], $5::int[]) as f(field_path, n)
                   where f.field_path = schema_drift.field_path)`;
const SAME_RUN = 'schema_drift.last_run_id is not distinct from $3::bigint';
export const DRIFT_UPDATE = preparedStatement(`update "schema_drift" set
  "last_run_items" = (case when ${SAME_RUN} then last_run_items else 0 end) + coalesce(${CARRIED}, 0),
  "last_run_total" = (case when ${SAME_RUN} then last_run_total else 0 end) + $6::int,
  "last_run_id" = $3::bigint,
  "last_seen_at" = case when ${CARRIED} is null then last_seen_at else $7::timestamptz end,
  "first_seen_day" = case when ${CARRIED} is null then first_seen_day else least(first_seen_day, $8::date) end
  where "source_id" = $1 and "resource" = $2`);

/** The parameters of DRIFT_UPDATE. */
export function driftUpdateValues(drift: WindowDrift): unknown[] {
  const paths = [...drift.counts.keys()].sort();
  const counts = paths.map((path) => drift.counts.get(path) ?? 0);
  return [drift.sourceId, drift.resource, drift.runId, paths, counts, drift.total, drift.seenAt, drift.day];
}

/**
 * The pair's turn: its row of schema_drift_turns (migration 0034), locked by this upsert until the
 * caller's transaction ends. A row lock, not an advisory one: only a role that may update the
 * table (the ones that write the ledger) can take it, so an analyst cannot hold the windows up.
 * The upsert creates the row the first time; a second window inserting it waits for the first's
 * commit, then takes the turn.
 */
async function takeTurn(db: Kysely<Database>, sourceId: string, resource: Resource): Promise<void> {
  await db
    .insertInto('schema_drift_turns')
    .values({ source_id: sourceId, resource })
    .onConflict((oc) => oc.columns(['source_id', 'resource']).doUpdateSet({ resource }))
    .execute();
}
