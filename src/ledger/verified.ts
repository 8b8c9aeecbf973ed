import { type Kysely, sql } from 'kysely';
import type { Database } from '../db/database.js';
import { tableOf, type WindowedResource } from '../schemas/resource-names.js';
import type { DayString } from '../time/days.js';
import type { DayRead } from './read.js';

/** The key of one window (source, resource, day): SyncRequest.only, a verify's counts. */
export function windowKey(source: string, resource: string, day: DayString): string {
  return `${source}\u0000${resource}\u0000${day}`;
}

/**
 * What a verify (src/sync/verify.ts) records of each day it read again: when, and what it found.
 * Its own statement per day, after the day's window transaction: the window's rows, its ledger
 * row and these columns never need to change together (a verify that stops between the two is
 * only a day not yet recorded as verified, which the scrub takes again).
 */
export interface VerifyFinding extends DayRead {
  /** Items the warehouse lacked, now stored. */
  lacked: number;
  /** Items whose stored version differed, now rewritten. */
  changed: number;
  /** Rows the service no longer serves, now marked missing upstream (two whole reads in a row). */
  gone: number;
  /** Items whose dt moved to another day. */
  moved: number;
}

export async function recordVerification(db: Kysely<Database>, finding: VerifyFinding): Promise<void> {
  await db
    .updateTable('sync_windows')
    .set({
      last_verified_at: sql<Date>`now()`,
      last_verify_lacked: finding.lacked,
      last_verify_changed: finding.changed,
      last_verify_gone: finding.gone,
      last_verify_moved: finding.moved,
    })
    .where('source_id', '=', finding.source)
    .where('resource', '=', finding.resource)
    .where('day', '=', finding.day)
    .execute();
}

/**
 * Of the given days, those holding rows that one whole read found absent and no second one has
 * confirmed yet (absent_since set, missing_upstream_since not): a verify reads them once more, so
 * that an absence is marked on the same evidence as a sync's, two whole reads in a row.
 */
export async function daysAbsentOnce(db: Kysely<Database>, days: readonly DayRead[]): Promise<DayRead[]> {
  const found: DayRead[] = [];
  const resources = [...new Set(days.map((d) => d.resource))];
  for (const resource of resources) {
    const of = days.filter((d) => d.resource === resource);
    const { rows } = await sql<{ source_id: string; day: string }>`
      select distinct p.source_id, p.day::text as day
        from unnest(${of.map((d) => d.source)}::text[], ${of.map((d) => d.day)}::date[]) as p(source_id, day)
       where exists (
         select 1 from ${sql.table(tableOf(resource))} x
          where x.source_id = p.source_id
            and x.dt >= (p.day::timestamp at time zone 'UTC') and x.dt < ((p.day + 1)::timestamp at time zone 'UTC')
            and x.absent_since is not null and x.missing_upstream_since is null)`.execute(db);
    found.push(...rows.map((r) => ({ source: r.source_id, resource, day: r.day })));
  }
  return found;
}

/** The database's clock: what a verify's rows are told apart by (first_seen_at). */
export async function databaseNow(db: Kysely<Database>): Promise<Date> {
  const { rows } = await sql<{ now: Date }>`select now() as now`.execute(db);
  const now = rows[0]?.now;
  if (now === undefined) throw new Error('select now() returned no row');
  return now;
}

/**
 * Per given day, the rows of its table first stored at or after `since`: the items a verify
 * found the warehouse lacked. Counted on the rows, by their own day: a window stores the items of
 * neighbouring days that come along with its answer when their day lacks them, and its counts
 * would give them to the wrong day.
 */
export async function rowsFirstSeenSince(
  db: Kysely<Database>,
  days: readonly DayRead[],
  since: Date,
): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const resource of [...new Set(days.map((d) => d.resource))]) {
    const of = days.filter((d) => d.resource === resource);
    const { rows } = await sql<{ source_id: string; day: string; n: number }>`
      select p.source_id, p.day::text as day, count(x.*)::int as n
        from unnest(${of.map((d) => d.source)}::text[], ${of.map((d) => d.day)}::date[]) as p(source_id, day)
        join ${sql.table(tableOf(resource))} x
          on x.source_id = p.source_id
         and x.dt >= (p.day::timestamp at time zone 'UTC') and x.dt < ((p.day + 1)::timestamp at time zone 'UTC')
       where x.first_seen_at >= ${since}
       group by p.source_id, p.day`.execute(db);
    for (const r of rows) counts.set(windowKey(r.source_id, resource, r.day), r.n);
  }
  return counts;
}

/** A settled day the scrub may verify, with when it was last verified (null: never). */
export interface ScrubCandidate extends DayRead {
  lastVerifiedAt: Date | null;
}

/**
 * The settled days of the given sources before `before` (the days the nightly sync does not read
 * again): done, not reopened (the sync reads those first itself).
 */
export async function scrubCandidates(
  db: Kysely<Database>,
  sources: readonly string[],
  before: DayString,
): Promise<ScrubCandidate[]> {
  if (sources.length === 0) return [];
  const rows = await db
    .selectFrom('sync_windows')
    .select(['source_id', 'resource', sql<string>`day::text`.as('day'), 'last_verified_at'])
    .where('source_id', 'in', sources)
    .where('status', '=', 'done')
    .where('reopened_at', 'is', null)
    .where('day', '<', before)
    .execute();
  return rows.map((r) => ({
    source: r.source_id,
    resource: r.resource as WindowedResource,
    day: r.day,
    lastVerifiedAt: r.last_verified_at,
  }));
}
