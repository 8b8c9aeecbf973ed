import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { Database } from '../db/database.js';
import { RESOURCES, WINDOWED_RESOURCES, type WindowedResource } from '../schemas/resource-names.js';
import type { DayString } from '../time/days.js';

/**
 * What the rest of the tool reads of the ledger (sync_windows) and the watermarks: the one place
 * that queries them besides the ledger's own writes and planning. status, the report and the
 * run's late-arrival count read through these; and, for status and the report alike, the
 * inventory of the fields the API sends that the spec does not describe (schema_drift).
 */

export interface DayRead {
  source: string;
  resource: WindowedResource;
  day: string;
}

/** Of the given days, those the ledger holds as done. */
export function doneDaysAmong(db: Kysely<Database>, days: readonly DayRead[]): Promise<DayRead[]> {
  return daysAmong(db, days, sql<boolean>`w.status = 'done'`);
}

/** Of the given days, those a proof reopened and no read has settled since (reopened_at). */
export function reopenedDaysAmong(db: Kysely<Database>, days: readonly DayRead[]): Promise<DayRead[]> {
  return daysAmong(db, days, sql<boolean>`w.reopened_at is not null`);
}

async function daysAmong(
  db: Kysely<Database>,
  days: readonly DayRead[],
  which: RawBuilder<boolean>,
): Promise<DayRead[]> {
  if (days.length === 0) return [];
  const { rows } = await sql<{ source_id: string; resource: WindowedResource; day: string }>`
    select w.source_id, w.resource, w.day::text as day
      from sync_windows w
      join unnest(${days.map((p) => p.source)}::text[], ${days.map((p) => p.resource)}::text[],
                  ${days.map((p) => p.day)}::date[]) as p(source_id, resource, day)
        on w.source_id = p.source_id and w.resource = p.resource and w.day = p.day
     where ${which}`.execute(db);
  return rows.map((r) => ({ source: r.source_id, resource: r.resource, day: r.day }));
}

/** Every watermark row. */
export function allWatermarks(db: Kysely<Database>) {
  return db.selectFrom('watermarks').selectAll().execute();
}

/** The ledger's rows that are truncated or failed, oldest day first: what `status` reports of windows. */
export function truncatedOrFailedWindows(db: Kysely<Database>) {
  return db
    .selectFrom('sync_windows')
    .select(['source_id', 'resource', 'day', 'status', 'truncated', 'last_error', 'run_id'])
    .where((eb) => eb.or([eb('truncated', '=', true), eb('status', '=', 'failed')]))
    .orderBy('day')
    .execute();
}

/** A day of the range, for one source and windowed resource, that the ledger does not hold as done and complete. */
export interface UnfinishedDay {
  source_id: string;
  resource: WindowedResource;
  day: string;
  /** null: no window for the day. */
  status: 'done' | 'open' | 'failed' | null;
  truncated: boolean | null;
  item_count: number | null;
  /** Most items one response for the day returned, valid and invalid; null before it was kept. */
  served_count: number | null;
  rejected_count: number | null;
  last_error: string | null;
  /** The watermark's start day; null when nothing was loaded for the resource yet. */
  start_day: string | null;
}

/** Every day of the range, per source and windowed resource, that is not done or is truncated. */
export async function unfinishedDays(
  db: Kysely<Database>,
  sources: readonly string[],
  from: DayString,
  to: DayString,
): Promise<UnfinishedDay[]> {
  const rows = await sql<UnfinishedDay>`
    select s.source_id, r.resource, d.day::date::text as day, w.status, w.truncated, w.item_count,
      w.served_count, w.rejected_count, w.last_error, wm.start_day::text as start_day
    from unnest(${sql.val([...sources])}::text[]) as s(source_id)
    cross join unnest(${sql.val([...WINDOWED_RESOURCES])}::text[]) as r(resource)
    cross join generate_series(${from}::date, ${to}::date, interval '1 day') as d(day)
    left join sync_windows w
      on w.source_id = s.source_id and w.resource = r.resource and w.day = d.day::date
    left join watermarks wm on wm.source_id = s.source_id and wm.resource = r.resource
    where w.status is distinct from 'done' or w.truncated
    order by d.day, s.source_id, r.resource`.execute(db);
  return rows.rows;
}

/**
 * The schema_drift inventory (kept by each window's load: src/load/schema-drift.ts) of one
 * source or all, by source, resource and field; the most recently first seen first when asked.
 */
export function schemaDriftRows(
  db: Kysely<Database>,
  { source, newestFirst = false }: { source?: string; newestFirst?: boolean } = {},
) {
  return db
    .selectFrom('schema_drift')
    .selectAll()
    .$call((q) => (source === undefined ? q : q.where('source_id', '=', source)))
    .$call((q) => (newestFirst ? q.orderBy('first_seen_at', 'desc') : q))
    .orderBy('source_id')
    .orderBy('resource')
    .orderBy('field_path')
    .execute();
}

/** What the verifies (the `verify` command, the scrub) have done of one source's settled days. */
export interface VerifyProgress {
  source: string;
  /** Settled (done) day windows, and those never verified. */
  settled: number;
  neverVerified: number;
  /** The oldest day with a window never verified; null when every one has been. */
  oldestUnverifiedDay: string | null;
  /** The oldest last_verified_at of a settled window once verified: how far behind the scrub is. */
  leastRecentlyVerifiedAt: Date | null;
  /** The newest last_verified_at of the source's windows: when a verify last ran; null: never. */
  lastVerifiedAt: Date | null;
  /** Windows verified since `since`, and what their last verify found. */
  verifiedSince: number;
  lacked: number;
  changed: number;
  gone: number;
  moved: number;
  /** Windows whose last verify since `since` found items the warehouse lacked (the day was short), newest first, at most 10. */
  short: { resource: WindowedResource; day: string }[];
}

/**
 * Per source, what the verifies have done (VerifyProgress). Only sources with a verified window,
 * unless `everySource`: the metrics and the report show a source never verified too (its settled
 * windows all unverified), where `status` has nothing to say of it but "never".
 */
export async function verifyProgress(
  db: Kysely<Database>,
  since: Date,
  { everySource = false }: { everySource?: boolean } = {},
): Promise<VerifyProgress[]> {
  const { rows } = await sql<{
    source: string;
    settled: number;
    never_verified: number;
    oldest_unverified_day: string | null;
    least_recently_verified_at: Date | null;
    last_verified_at: Date | null;
    verified_since: number;
    lacked: number;
    changed: number;
    gone: number;
    moved: number;
    short: { resource: WindowedResource; day: string }[] | null;
  }>`
    select w.source_id as source,
           count(*) filter (where w.status = 'done')::int as settled,
           count(*) filter (where w.status = 'done' and w.last_verified_at is null)::int as never_verified,
           min(w.day) filter (where w.status = 'done' and w.last_verified_at is null)::text as oldest_unverified_day,
           min(w.last_verified_at) filter (where w.status = 'done') as least_recently_verified_at,
           max(w.last_verified_at) as last_verified_at,
           count(*) filter (where w.last_verified_at >= ${since})::int as verified_since,
           coalesce(sum(w.last_verify_lacked) filter (where w.last_verified_at >= ${since}), 0)::int as lacked,
           coalesce(sum(w.last_verify_changed) filter (where w.last_verified_at >= ${since}), 0)::int as changed,
           coalesce(sum(w.last_verify_gone) filter (where w.last_verified_at >= ${since}), 0)::int as gone,
           coalesce(sum(w.last_verify_moved) filter (where w.last_verified_at >= ${since}), 0)::int as moved,
           (select json_agg(json_build_object('resource', s.resource, 'day', s.day::text) order by s.day desc)
              from (select x.resource, x.day from sync_windows x
                     where x.source_id = w.source_id and x.last_verified_at >= ${since} and x.last_verify_lacked > 0
                     order by x.day desc limit 10) s) as short
      from sync_windows w
     group by w.source_id
    having ${everySource} or count(*) filter (where w.last_verified_at is not null) > 0
     order by w.source_id`.execute(db);
  return rows.map((r) => ({
    source: r.source,
    settled: r.settled,
    neverVerified: r.never_verified,
    oldestUnverifiedDay: r.oldest_unverified_day,
    leastRecentlyVerifiedAt: r.least_recently_verified_at,
    lastVerifiedAt: r.last_verified_at,
    verifiedSince: r.verified_since,
    lacked: r.lacked,
    changed: r.changed,
    gone: r.gone,
    moved: r.moved,
    short: r.short ?? [],
  }));
}

/** A window whose last verify found a difference: what it found, and when. */
export interface VerifyDifference extends DayRead {
  verifiedAt: Date;
  lacked: number;
  changed: number;
  gone: number;
  moved: number;
}

/**
 * The windows (of one source, or all) whose last verify found the warehouse different from the
 * service (lacked, changed, gone or moved), the most recently verified first, at most `limit`.
 */
export async function verifyDifferences(
  db: Kysely<Database>,
  { source, limit }: { source?: string; limit: number },
): Promise<VerifyDifference[]> {
  const rows = await db
    .selectFrom('sync_windows')
    .select([
      'source_id',
      'resource',
      sql<string>`day::text`.as('day'),
      'last_verified_at',
      'last_verify_lacked',
      'last_verify_changed',
      'last_verify_gone',
      'last_verify_moved',
    ])
    .where('last_verified_at', 'is not', null)
    .where(sql<boolean>`last_verify_lacked + last_verify_changed + last_verify_gone + last_verify_moved > 0`)
    .$call((q) => (source === undefined ? q : q.where('source_id', '=', source)))
    .orderBy('last_verified_at', 'desc')
    .orderBy('day', 'desc')
    .orderBy('source_id')
    .orderBy('resource')
    .limit(limit)
    .execute();
  return rows.map((r) => ({
    source: r.source_id,
    resource: r.resource as WindowedResource,
    day: r.day,
    verifiedAt: r.last_verified_at as Date,
    lacked: r.last_verify_lacked ?? 0,
    changed: r.last_verify_changed ?? 0,
    gone: r.last_verify_gone ?? 0,
    moved: r.last_verify_moved ?? 0,
  }));
}

/** A request's days, as the ledger records the one a day was settled on. */
interface SettledRequest {
  startdate: DayString;
  enddate: DayString;
}

/**
 * The days a queued run's workers settled (done, not reopened since), before `before` (today),
 * for the planner's last proof: whether a proof has proved each yet (each worker proves only the
 * stretches it completes), and the size of a day settled whole at a size no cap its reader knew
 * covered (uncapped_served), which a cap a worker proved since reopens, and the request its own
 * answer settled it on (settled_from, settled_to), which the reading learned since may not hold,
 * and whether it was read in parts (more items than its largest answer served: halves or time
 * slices, which stand on the reading they were asked under, not on that request alone).
 */
export async function settledDaysOfRun(
  db: Kysely<Database>,
  key: { source: string; resource: WindowedResource },
  runId: number,
  before: DayString,
): Promise<
  {
    day: DayString;
    proved: boolean;
    uncappedServed: number | null;
    under: SettledRequest | null;
    /** Read in parts (halves, time slices): more items than its largest answer served. */
    parts: boolean;
  }[]
> {
  const rows = await db
    .selectFrom('sync_windows')
    .select([
      sql<DayString>`day::text`.as('day'),
      sql<boolean>`proved_at is not null`.as('proved'),
      sql<number | null>`case when truncated then null else uncapped_served end`.as('uncapped_served'),
      sql<DayString | null>`case when truncated then null else settled_from::text end`.as('settled_from'),
      sql<DayString | null>`settled_to::text`.as('settled_to'),
      sql<boolean>`coalesce(item_count > served_count, false)`.as('parts'),
    ])
    .where('source_id', '=', key.source)
    .where('resource', '=', key.resource)
    .where('run_id', '=', runId)
    .where('status', '=', 'done')
    .where('reopened_at', 'is', null)
    .where('day', '<', before)
    .orderBy('day')
    .execute();
  return rows.map((row) => ({
    day: row.day,
    proved: row.proved,
    uncappedServed: row.uncapped_served,
    under:
      row.settled_from === null || row.settled_to === null
        ? null
        : { startdate: row.settled_from, enddate: row.settled_to },
    parts: row.parts,
  }));
}

/**
 * Canaries for a proof made outside the windows (the planner of a queued run), best first, up to
 * three: days a proof already found whole, not truncated, of at most `most` items, the run's own
 * first, then the largest; each with the times of the items the warehouse holds of it as the API
 * served them. After them, days the run settled that no proof found whole yet (`proved` false; a
 * first backfill whose workers each settled fewer days than a stretch has no other): whole as far
 * as their reader knew, they can prove a reading stale, not vouch for one. A day whose rows are not
 * exactly its settled count (an item since marked absent, or one a webhook brought alone) is none:
 * a canary must be what the server served, no more, no less.
 */
export async function ledgerCanaries(
  db: Kysely<Database>,
  key: { source: string; resource: WindowedResource },
  runId: number,
  most: number,
): Promise<{ day: DayString; times: number[]; proved: boolean }[]> {
  const candidates = await db
    .selectFrom('sync_windows')
    .select([
      sql<DayString>`day::text`.as('day'),
      'item_count',
      sql<boolean>`proved_at is not null`.as('proved'),
    ])
    .where('source_id', '=', key.source)
    .where('resource', '=', key.resource)
    .where('status', '=', 'done')
    .where('truncated', '=', false)
    .where((eb) => eb.or([eb('proved_at', 'is not', null), eb('run_id', '=', runId)]))
    .where('reopened_at', 'is', null)
    .where('item_count', '>', 0)
    .where('item_count', '<=', most)
    .orderBy(sql`proved_at is not null`, 'desc')
    .orderBy(sql`run_id is not distinct from ${runId}`, 'desc')
    .orderBy('item_count', 'desc')
    .limit(3)
    .execute();
  const canaries: { day: DayString; times: number[]; proved: boolean }[] = [];
  for (const { day, item_count, proved } of candidates) {
    const times = await servedTimesOfDay(db, key, day);
    if (times.length === item_count) canaries.push({ day, times, proved });
  }
  return canaries;
}

/** The dt (epoch ms) of the rows of one UTC day the API served and still serves. */
export async function servedTimesOfDay(
  db: Kysely<Database>,
  key: { source: string; resource: WindowedResource },
  day: DayString,
): Promise<number[]> {
  const table = RESOURCES[key.resource].table;
  // Rows only a webhook brought were never served by the API (recordings come by the API alone).
  const served = key.resource === 'recordings' ? sql`true` : sql`origin <> 'webhook'`;
  const { rows } = await sql<{ ms: string }>`
    select (extract(epoch from dt) * 1000)::int8::text as ms from ${sql.table(table)}
     where source_id = ${key.source}
       and dt >= (${day}::date)::timestamp at time zone 'UTC' and dt < (${day}::date + 1)::timestamp at time zone 'UTC'
       and absent_since is null and missing_upstream_since is null and ${served}`.execute(db);
  return rows.map((row) => Number(row.ms));
}
