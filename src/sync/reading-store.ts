import { type Kysely, sql } from 'kysely';
import type pg from 'pg';
import type { Database } from '../db/database.js';
import type { ServerReadingColumns } from '../db/tables/server-readings.js';
import { inDbTransaction, inTransaction } from '../db/transaction.js';
import { sessionOf, staleElsewhere } from '../extract/day-plan.js';
import type { ResourceKnowledge } from '../extract/plan-steps.js';
import { readingChanges } from '../extract/reading-changes.js';
import { endQuiet } from '../extract/reading-check.js';
import { giveBackProofs, ledgerTook, type ReadingSession, takeProofs } from '../extract/reading-session.js';
import {
  type BoundItemTimes,
  boundItemTimes,
  emptyReading,
  endInclusive,
  handedOn,
  knownCaps,
  learnedThisRun,
  reachPast,
  type ServerReading,
  type StoredReach,
  serverDay,
  shareCaps,
  startFrom,
  startInclusive,
  storedReach,
  suspectCap,
} from '../extract/server-reading.js';
import { recordProofs, reopenSettledAtCap } from '../ledger/ledger.js';
import type { Logger } from '../log/logger.js';
import { type SharedCheck, type StoredReadingRow, sharedCheckOf } from '../queue/source-slots.js';
import { isWindowed, type WindowedResource } from '../schemas/resource-names.js';
import { knowledgeOfEach } from './context.js';

/**
 * A source's server readings over their life, for every writer (an in-process run, each worker
 * of a queued run): loaded when the writer starts on a run, checked once per run and resource
 * (the check is src/extract/reading-check.ts; a queued run's workers share it through
 * queue_run_checks), and stored under one rule.
 *
 * The rule: a writer stores over what it last read or stored, never over another writer's
 * reading (compare-and-store), unless it found the reading stale and learned it again, which
 * replaces whatever is stored. An in-process run and a queued run's workers may write at once
 * (the queued run lets the run lock go while its workers work), and several workers of one run
 * each learn for themselves: a writer that never found the reading stale must not put an old
 * reading back over the one another re-learned after the server changed (a later worker trusts
 * what is stored). Every change of a stored reading is a row of reading_changes and a warning.
 *
 * Bounds, server day, order and a refused limit carry over from run to run (proved by items, and
 * checked each run); the cap and the largest response are learned again each run, so a cap the
 * server lowered or raised is seen for what it is now.
 */
export interface SourceReadings {
  source: string;
  /** The run's working copies, one per resource, shared by the writer's windows of it. */
  knowledge: Record<WindowedResource, ResourceKnowledge>;
  /**
   * Per resource, the reading and reach as this writer last read or stored them, and
   * knowledge.relearned then; and the row as it holds them (`row`: its cap and largest answer, which
   * a run learns again from none), where this writer knows it.
   */
  seen: Map<WindowedResource, SeenReading & { relearned: number; row?: StoredRow }>;
  /** Resources whose check this writer recorded in queue_run_checks, or found there. */
  checkShared: Set<WindowedResource>;
  /**
   * Per resource, how many of its own re-learnings this worker has told, and the time of the
   * latest stale verdict its reading accounts for (exchangeVerdicts).
   */
  verdicts: Map<WindowedResource, { told: number; heard: number }>;
  /** Per resource, the run's shared quiet decision and largest answer as this worker last told or heard them. */
  shared: Map<WindowedResource, { quiet: boolean | null; largestResponse: number }>;
  /** The source's caps the run's workers know, as this worker last told or heard them (hearCaps). */
  toldCaps: Set<number>;
}

/**
 * What is stored of `source`, as a writer's starting point. With `queuedRunId`, the checks the
 * run's other workers already made count as this writer's own: read before the readings, since
 * a reading a worker checked (and re-learned) is stored before its check row.
 */
export async function loadReadings(
  db: Kysely<Database>,
  source: string,
  queuedRunId?: number,
): Promise<SourceReadings> {
  const checks =
    queuedRunId === undefined
      ? []
      : await db
          .selectFrom('queue_run_checks')
          .select(['resource', 'checked', 'quiet', 'largest_response', 'last_stale_at', 'caps'])
          .where('run_id', '=', queuedRunId)
          .where('source_id', '=', source)
          .execute();
  const stored = await readStoredRows(db, source, queuedRunId);
  // The stored readings themselves, not copies: what the run knows beside each (the stored cap,
  // startFrom) is kept beside that object.
  const knowledge = knowledgeOfEach(
    (resource): ResourceKnowledge => ({ reading: stored.get(resource)?.reading ?? emptyReading() }),
  );
  shareCaps(Object.values(knowledge).map((k) => k.reading));
  const seen: SourceReadings['seen'] = new Map();
  for (const [resource, { reading, row }] of stored)
    seen.set(resource, { reading: { ...reading }, reach: handedOn(reading), relearned: 0, row });
  const readings: SourceReadings = {
    source,
    knowledge,
    seen,
    checkShared: new Set(),
    verdicts: new Map(),
    shared: new Map(),
    toldCaps: new Set(),
  };
  for (const row of checks)
    if (isWindowed(row.resource)) hearCheck(readings, row.resource, sharedCheckOf(row));
  return readings;
}

/**
 * What the run's other workers shared of `resource` (queue_run_checks), taken as this worker's
 * own, as an in-process run's windows take each other's: the check of the stored reading; and,
 * while no worker has found the reading stale this run (and this one learned it from nothing
 * since), the quiet decision and the largest answer. From a stale verdict on, each worker learns
 * them again from its own answers, as every re-learning does. A largest answer is heard only
 * where no cap is proved here: one above a proved cap is the server's news to learn by asking.
 */
export function hearCheck(readings: SourceReadings, resource: WindowedResource, shared: SharedCheck): void {
  const knowledge = readings.knowledge[resource];
  hearCaps(readings, shared.caps);
  if (shared.checked) {
    knowledge.staleChecked = true;
    readings.checkShared.add(resource);
  }
  if (shared.stale || !sharesLearning(readings, resource)) return;
  if (shared.quiet === false && knowledge.quiet === true) endQuiet(knowledge);
  else if (shared.quiet !== null) knowledge.quiet ??= shared.quiet;
  const { reading } = knowledge;
  if (reading.cap === null && shared.largestResponse > reading.largestResponse)
    reading.largestResponse = shared.largestResponse;
  readings.shared.set(resource, { quiet: shared.quiet, largestResponse: shared.largestResponse });
}

/**
 * Caps the run's other workers know, heard for every resource of the source (a cap is the server's:
 * a deploy that lowers it lowers it for each endpoint), stale verdicts or not: an answer of exactly
 * such a size is then checked, and a day this worker settled at it is read again (reopenUncapped).
 */
export function hearCaps(readings: SourceReadings, caps: readonly number[]): void {
  for (const cap of caps) {
    readings.toldCaps.add(cap);
    for (const knowledge of Object.values(readings.knowledge)) suspectCap(knowledge.reading, cap);
  }
}

/** Whether this worker still learns the run's server with the others: no stale verdict, its own or heard. */
function sharesLearning(readings: SourceReadings, resource: WindowedResource): boolean {
  return (
    (readings.knowledge[resource].relearned ?? 0) === 0 && (readings.verdicts.get(resource)?.heard ?? 0) === 0
  );
}

/** What a writer's store is compared with: a reading, none (nothing stored yet), or anything. */
export type StoreOver = SeenReading | null | 'relearned';

/**
 * A stored reading as a writer last read or stored it: its evidence, and the reach its requests
 * take past it (handedOn). Both are compared before a writer stores over it: a reach one worker let
 * go (its answers showed the server serving past it) is not put back by another that still
 * carried it from an earlier run.
 */
export interface SeenReading {
  reading: ServerReading;
  reach: StoredReach;
}

/**
 * Whether a writer stores its reading of `resource` now, and over what: not when no response
 * taught it anything or nothing changed since it last read or stored (most windows of a run
 * change nothing); over anything when it re-learned the reading since; else over what it saw last.
 * A reach the writer's answers let go is a change (handedOn), though the evidence stays.
 */
export function storeOver(
  knowledge: ResourceKnowledge,
  last: (SeenReading & { relearned: number }) | undefined,
): StoreOver | undefined {
  if (!knowledge.responses) return undefined;
  const relearned = knowledge.relearned ?? 0;
  if (relearned !== (last?.relearned ?? 0)) return 'relearned';
  if (last === undefined) return null;
  const unchanged =
    JSON.stringify(knowledge.reading) === JSON.stringify(last.reading) &&
    sameReach(handedOn(knowledge.reading), last.reach);
  return unchanged ? undefined : { reading: last.reading, reach: last.reach };
}

function sameReach(a: StoredReach, b: StoredReach): boolean {
  return a.startMs === b.startMs && a.endMs === b.endMs;
}

/**
 * Stores what the writer learned of `resource` under the one rule (see SourceReadings). Tried
 * once per change of the writer's own. Returns whether it was stored.
 */
export async function storeReading(
  db: Kysely<Database>,
  readings: SourceReadings,
  resource: WindowedResource,
  run: { runId: number; logger: Logger },
): Promise<boolean> {
  const knowledge = readings.knowledge[resource];
  const last = readings.seen.get(resource);
  const over = storeOver(knowledge, last);
  if (over === undefined) return false;
  const now = {
    reading: { ...knowledge.reading },
    reach: handedOn(knowledge.reading),
    relearned: knowledge.relearned ?? 0,
  };
  // A run learns the largest answer (and the cap) again from none: each of its first answers, on
  // each worker, changes the writer's reading, and most would store the row as it is (two thirds
  // of a queued backfill's stores, each a transaction and a flush of the WAL). What writes nothing
  // over the row as this writer last saw it is not sent; a re-learned reading always is.
  if (typeof over === 'object' && over !== null && last?.row !== undefined && writesNothing(last.row, now)) {
    readings.seen.set(resource, { ...now, row: last.row });
    return false;
  }
  const written: { row?: StoredRow } = {};
  readings.seen.set(resource, now);
  const stored = await saveServerReading(
    db,
    readings.source,
    resource,
    knowledge.reading,
    over,
    run,
    written,
  );
  readings.seen.set(resource, { ...now, ...(written.row === undefined ? {} : { row: written.row }) });
  return stored;
}

/** A stored row as a writer last read or wrote it; `thisRun`, written since the run started. */
type StoredRow = SeenReading & { thisRun: boolean };

/**
 * Whether storing `reading` (with its reach) over `row` tells it nothing: leaves it as it is, or,
 * over a row this run wrote, only lowers its largest answer. A run's stored largest answer is the
 * largest of its answers, as an in-process run's is; a queued run's workers, each learning it
 * from none, would otherwise take it down and up again in turn.
 */
export function writesNothing(row: StoredRow, { reading, reach }: SeenReading): boolean {
  const after = asStored(row.reading, reading);
  const before = row.reading;
  const largest = row.thisRun
    ? after.largestResponse <= before.largestResponse
    : after.largestResponse === before.largestResponse;
  return (
    after.headMs === before.headMs &&
    after.tailMs === before.tailMs &&
    after.order === before.order &&
    largest &&
    after.cap === before.cap &&
    after.limitRefused === before.limitRefused &&
    after.instants === before.instants &&
    sameReach(reach, row.reach)
  );
}

/**
 * The source's stored readings as they are now (read with a queued window's slot release): what a
 * worker's next store is compared with (writesNothing), in place of what it last read or wrote.
 */
export function hearStored(readings: SourceReadings, rows: readonly StoredReadingRow[]): void {
  for (const row of rows) {
    if (!isWindowed(row.resource)) continue;
    const seen = readings.seen.get(row.resource);
    if (seen === undefined) continue;
    readings.seen.set(row.resource, { ...seen, row: { ...seenOf(row), thisRun: row.this_run } });
  }
}

/** What a writer logs once it recorded the run's check of a stored reading. */
const CHECKED_LINE = 'checked the stored server reading for the run';

/**
 * After a window of a queued run: what this writer found that the run's other workers need not
 * ask again (hearCheck): the run's check of the stored reading (recorded once per writer, run and
 * resource), the caps it knows that the run did not, and, while the run learns the server
 * together, its quiet decision and a larger answer than the run had seen. What the row holds then,
 * the others' included, is heard back.
 */
export async function shareCheck(
  db: Kysely<Database>,
  readings: SourceReadings,
  resource: WindowedResource,
  run: { runId: number; logger: Logger },
  /** Before the writer stored its reading: nothing, if it re-learned it (its check row comes after the store). */
  beforeStore = false,
): Promise<void> {
  const knowledge = readings.knowledge[resource];
  const learns = sharesLearning(readings, resource);
  if (beforeStore && !learns) return;
  const checks = knowledge.staleChecked === true && !readings.checkShared.has(resource);
  const told = readings.shared.get(resource) ?? { quiet: null, largestResponse: 0 };
  const quiet = learns ? (knowledge.quiet ?? null) : null;
  const largest = learns ? knowledge.reading.largestResponse : 0;
  // Quiet mode once ended stays ended for the run: only a decision, or its end, is news.
  const quietNews = quiet !== null && quiet !== told.quiet && told.quiet !== false;
  const caps = knownCaps(knowledge.reading);
  const capsNews = caps.some((cap) => !readings.toldCaps.has(cap));
  if (!checks && !quietNews && largest <= told.largestResponse && !capsNews) return;
  const row = await db
    .insertInto('queue_run_checks')
    .values({
      run_id: run.runId,
      source_id: readings.source,
      resource,
      checked: knowledge.staleChecked === true,
      quiet,
      largest_response: largest,
      caps,
    })
    .onConflict((oc) =>
      oc.columns(['run_id', 'source_id', 'resource']).doUpdateSet({
        checked: sql<boolean>`queue_run_checks.checked or excluded.checked`,
        // Once a worker found the reading stale, what was shared before is of the old reading.
        quiet: sql<boolean | null>`case when queue_run_checks.last_stale_at is null
          then least(queue_run_checks.quiet, excluded.quiet) else queue_run_checks.quiet end`,
        largest_response: sql<number>`case when queue_run_checks.last_stale_at is null
          then greatest(queue_run_checks.largest_response, excluded.largest_response)
          else queue_run_checks.largest_response end`,
        caps: sql<
          number[]
        >`array(select distinct c from unnest(queue_run_checks.caps || excluded.caps) c order by c)`,
      }),
    )
    .returning(['checked', 'quiet', 'largest_response', 'last_stale_at', 'caps'])
    .executeTakeFirst();
  if (checks) run.logger.info({ source: readings.source, resource }, CHECKED_LINE);
  if (row !== undefined) hearCheck(readings, resource, sharedCheckOf(row));
}

/**
 * A queued run's workers share their stale verdicts (reading-session.ts): this worker tells the
 * re-learnings it made since it last told (stamped with the database's time), and hears when the
 * latest verdict of any worker was, on any resource of the source: a deploy changes the server,
 * not one endpoint, and an endpoint whose canary the new deploy answered proves nothing stale of
 * itself while the days between heard both (a rolling deploy). Returns whether a verdict came
 * later than this worker's reading was learned: its own reading is then stale too. A verdict
 * older than this worker's own re-learning is the same change, already handled. `lastStale`: the
 * latest verdict as read a moment ago (with the window's slot, source-slots.ts; 0 for none), where
 * this worker has nothing to tell: no read of its own then.
 */
export async function exchangeVerdicts(
  db: Kysely<Database>,
  readings: SourceReadings,
  resource: WindowedResource,
  run: { runId: number; logger: Logger },
  lastStale?: number,
): Promise<boolean> {
  const own = readings.knowledge[resource].relearned ?? 0;
  const known = readings.verdicts.get(resource) ?? { told: 0, heard: 0 };
  const add = own - known.told;
  const key = { run_id: run.runId, source_id: readings.source, resource };
  let latest = lastStale ?? 0;
  if (add > 0) {
    const told = await tell(db, key, add);
    latest = told.latest;
    // A re-learning is the run's check: where this verdict made it, said as shareCheck says its own.
    if (told.madeCheck && !readings.checkShared.has(resource)) {
      readings.checkShared.add(resource);
      run.logger.info({ source: readings.source, resource }, CHECKED_LINE);
    }
  } else if (lastStale === undefined) latest = await hear(db, key);
  readings.verdicts.set(resource, { told: own, heard: Math.max(known.heard, latest) });
  // This worker's own verdict is as new as any: only a later one, from another, is news.
  return add === 0 && latest > known.heard;
}

type VerdictKey = { run_id: number; source_id: string; resource: WindowedResource };

/**
 * Tells `add` stale verdicts of this worker; returns the latest verdict's time, and whether the
 * row's upsert made the run's check (a re-learning is one) that no writer had recorded before.
 */
async function tell(
  db: Kysely<Database>,
  key: VerdictKey,
  add: number,
): Promise<{ latest: number; madeCheck: boolean }> {
  const row = await db
    .with('before', (qb) =>
      qb
        .selectFrom('queue_run_checks')
        .select('checked')
        .where('run_id', '=', key.run_id)
        .where('source_id', '=', key.source_id)
        .where('resource', '=', key.resource),
    )
    .insertInto('queue_run_checks')
    .values({ ...key, stale_verdicts: add, last_stale_at: sql<Date>`now()` })
    .onConflict((oc) =>
      oc.columns(['run_id', 'source_id', 'resource']).doUpdateSet({
        checked: true,
        stale_verdicts: sql<number>`queue_run_checks.stale_verdicts + ${add}`,
        last_stale_at: sql<Date>`now()`,
      }),
    )
    .returning((eb) => ['last_stale_at', eb.selectFrom('before').select('checked').as('checked_before')])
    .executeTakeFirst();
  return {
    latest: row?.last_stale_at?.getTime() ?? 0,
    madeCheck: row !== undefined && row.checked_before !== true,
  };
}

/** The latest stale verdict of any worker on the run's source, 0 for none. */
async function hear(db: Kysely<Database>, key: VerdictKey): Promise<number> {
  const row = await db
    .selectFrom('queue_run_checks')
    .select((eb) => eb.fn.max('last_stale_at').as('last_stale_at'))
    .where('run_id', '=', key.run_id)
    .where('source_id', '=', key.source_id)
    .executeTakeFirst();
  return row?.last_stale_at?.getTime() ?? 0;
}

/**
 * What earlier runs learned about a source's server, per windowed resource, as a run starts from
 * it. With `queuedRunId`: a reading stored since that run started is the run's own learning so far
 * (another of its workers stored it), not one earlier runs' answers held to (learnedThisRun).
 */
export async function readServerReadings(
  db: Kysely<Database>,
  sourceId: string,
  queuedRunId?: number,
): Promise<Map<WindowedResource, ServerReading>> {
  const stored = await readStoredRows(db, sourceId, queuedRunId);
  return new Map([...stored].map(([resource, { reading }]) => [resource, reading]));
}

/** Each resource's reading a run starts from (readServerReadings), with its row as stored. */
async function readStoredRows(
  db: Kysely<Database>,
  sourceId: string,
  queuedRunId?: number,
): Promise<Map<WindowedResource, { reading: ServerReading; row: StoredRow }>> {
  const rows = await db
    .selectFrom('server_readings')
    .selectAll('server_readings')
    .select((eb) =>
      queuedRunId === undefined
        ? sql<boolean>`false`.as('this_run')
        : eb
            .fn<boolean>('coalesce', [
              eb(
                'server_readings.updated_at',
                '>=',
                eb.selectFrom('sync_runs').select('started_at').where('run_id', '=', queuedRunId),
              ),
              sql<boolean>`false`,
            ])
            .as('this_run'),
    )
    .where('source_id', '=', sourceId)
    .execute();
  const readings = new Map<WindowedResource, { reading: ServerReading; row: StoredRow }>();
  for (const row of rows) {
    const reading = startFrom(storedReading(row), storedReach(row.start_reach_ms, row.end_reach_ms), {
      startMs: row.head_item_ms,
      endMs: row.tail_item_ms,
    });
    if (row.this_run) learnedThisRun(reading);
    readings.set(row.resource, { reading, row: { ...seenOf(row), thisRun: row.this_run } });
  }
  return readings;
}

/** A stored row as a writer sees it: its reading and the reach stored with it (as loaded: handedOn). */
function seenOf(row: ServerReadingColumns): SeenReading {
  const reading = storedReading(row);
  return { reading, reach: reachPast(reading, storedReach(row.start_reach_ms, row.end_reach_ms)) };
}

function storedReading(row: ServerReadingColumns): ServerReading {
  return {
    headMs: row.head_ms,
    tailMs: row.tail_ms,
    order: row.item_order,
    largestResponse: row.largest_response,
    cap: row.cap,
    limitRefused: row.limit_refused,
    instants: row.instants,
  };
}

/**
 * Stores a reading over `over` (see StoreOver); a reading without an item served keeps the
 * stored cap and largest response. What carries over from run to run (readServerReadings) is what
 * is compared. The fields it changes are recorded in reading_changes, in the same transaction,
 * and each said in a warning. Returns whether anything was stored: a reading that may not replace
 * the stored one still stores its verdict on instants where none is (foldInstants).
 */
export async function saveServerReading(
  db: Kysely<Database>,
  sourceId: string,
  resource: WindowedResource,
  reading: ServerReading,
  over: StoreOver,
  run: { runId: number | null; logger: Logger },
  /** Given: `row` set to the row as this store wrote it, where it wrote it. */
  written?: { row?: StoredRow },
): Promise<boolean> {
  let reopenedAtCap = { cap: 0, days: 0 };
  let wrote: StoredRow | undefined;
  const changes = await inDbTransaction(db, async (trx) => {
    reopenedAtCap = { cap: 0, days: 0 };
    wrote = undefined;
    // Locked: the changes are those from the reading this store replaces, whoever wrote it.
    const row = await lockedReading(trx, sourceId, resource);
    // A source whose windows all failed before writing has no row yet: nothing to attach to. A
    // stored reading's source is there (its foreign key): asked only when none is stored.
    if (row === undefined && !(await sourceKnown(trx, sourceId))) return undefined;
    const now = row && seenOf(row);
    const before = now?.reading;
    if (!mayReplace(now, over)) return foldInstants(trx, sourceId, resource, before, reading);
    const after = asStored(before, reading);
    // Nothing stored to lock: of two first writers, the second finds the first's row (its insert
    // waits for the first's commit) and stores nothing of its reading (unless it re-learned: that
    // replaces anything), only what it proved of instants.
    const fresh = before === undefined && over !== 'relearned';
    const items = boundItemTimes(reading);
    if (!(await writeReading(trx, sourceId, resource, after, { reach: handedOn(reading), items }, fresh))) {
      const first = await lockedReading(trx, sourceId, resource);
      return foldInstants(trx, sourceId, resource, first && storedReading(first), reading);
    }
    wrote = { reading: after, reach: handedOn(reading), thisRun: true };
    const found = before === undefined ? [] : readingChanges(before, after, over === 'relearned');
    // A cap proved that the stored reading did not have: days settled at its size may be cut.
    if (after.cap !== null && after.cap !== before?.cap)
      reopenedAtCap = { cap: after.cap, days: await reopenSettledAtCap(trx, sourceId, after.cap) };
    if (found.length > 0)
      await trx
        .insertInto('reading_changes')
        .values(
          found.map((c) => ({
            source_id: sourceId,
            resource,
            field: c.field,
            from_value: c.from,
            to_value: c.to,
            run_id: run.runId,
            evidence: c.evidence,
          })),
        )
        .execute();
    return found;
  });
  if (written !== undefined && wrote !== undefined) written.row = wrote;
  if (changes === undefined) return false;
  if (reopenedAtCap.days > 0)
    run.logger.warn(
      { source: sourceId, cap: reopenedAtCap.cap, days: reopenedAtCap.days },
      'days settled whole at exactly the cap now proved may have been cut by it: reopened, read first by the next run',
    );
  for (const c of changes)
    run.logger.warn(
      { source: sourceId, resource, field: c.field, from: c.from, to: c.to, evidence: c.evidence },
      'server reading changed',
    );
  return true;
}

function lockedReading(db: Kysely<Database>, sourceId: string, resource: WindowedResource) {
  return db
    .selectFrom('server_readings')
    .selectAll()
    .where('source_id', '=', sourceId)
    .where('resource', '=', resource)
    .forUpdate()
    .executeTakeFirst();
}

/**
 * A writer whose reading may not replace the stored one still stores a verdict on instants where
 * none is stored: the probe's answer proves a property of the server, whichever reading of its
 * bounds the writer held (asStored keeps such a verdict across a re-learning in the same way).
 * Without it, a worker that lost the race to store first, or stores over a reading another
 * re-learned, would keep its verdict to itself, and every later run would probe again or slice
 * a day the server cannot slice. Returns no changes when it stored, undefined when it did not.
 */
async function foldInstants(
  db: Kysely<Database>,
  sourceId: string,
  resource: WindowedResource,
  stored: ServerReading | undefined,
  reading: ServerReading,
): Promise<[] | undefined> {
  if (stored === undefined || stored.instants !== null || reading.instants === null) return undefined;
  await db
    .updateTable('server_readings')
    .set({ instants: reading.instants, updated_at: sql<Date>`now()` })
    .where('source_id', '=', sourceId)
    .where('resource', '=', resource)
    .execute();
  return [];
}

async function sourceKnown(db: Kysely<Database>, sourceId: string): Promise<boolean> {
  const known = await db
    .selectFrom('sources')
    .select('source_id')
    .where('source_id', '=', sourceId)
    .executeTakeFirst();
  return known !== undefined;
}

/**
 * The one rule: a re-learned reading replaces anything; otherwise what is stored must still be what
 * the writer last saw (nothing, or the same carried-over fields and reach).
 */
export function mayReplace(stored: SeenReading | undefined, over: StoreOver): boolean {
  if (over === 'relearned') return true;
  if (stored === undefined || over === null) return stored === undefined && over === null;
  const [now, then] = [stored.reading, over.reading];
  return (
    now.headMs === then.headMs &&
    now.tailMs === then.tailMs &&
    now.order === then.order &&
    now.limitRefused === then.limitRefused &&
    sameReach(stored.reach, over.reach)
  );
}

/**
 * The reading as it is stored: one no item was served to keeps the stored cap and largest
 * response; one whose writer never asked with instants keeps what another writer proved of them
 * (a worker that re-learned the bounds before its first probe knows nothing of instants, and a
 * server property is not undone by not asking).
 */
function asStored(before: ServerReading | undefined, reading: ServerReading): ServerReading {
  const instants = reading.instants ?? before?.instants ?? null;
  if (reading.largestResponse > 0 || before === undefined) return { ...reading, instants };
  return { ...reading, instants, cap: before.cap, largestResponse: before.largestResponse };
}

/** Inserts (`fresh`: only where no row is stored) or replaces the row; whether it was written. */
async function writeReading(
  db: Kysely<Database>,
  sourceId: string,
  resource: WindowedResource,
  reading: ServerReading,
  beside: {
    /** How far the writer's requests reached past the evidence (handedOn): the next reader asks as far. */
    reach: StoredReach;
    /** The items the bounds rest on (boundItemTimes): the next reader may ask them again. */
    items: BoundItemTimes;
  },
  fresh: boolean,
): Promise<boolean> {
  const { reach, items } = beside;
  const values = {
    head_ms: reading.headMs,
    tail_ms: reading.tailMs,
    head_item_ms: items.startMs,
    tail_item_ms: items.endMs,
    start_reach_ms: reach.startMs ?? null,
    end_reach_ms: reach.endMs ?? null,
    start_inclusive: startInclusive(reading),
    end_inclusive: endInclusive(reading),
    server_day: serverDay(reading),
    item_order: reading.order,
    cap: reading.cap,
    largest_response: reading.largestResponse,
    limit_refused: reading.limitRefused,
    instants: reading.instants,
  };
  const result = await db
    .insertInto('server_readings')
    .values({ source_id: sourceId, resource, ...values })
    .onConflict((oc) => {
      const key = oc.columns(['source_id', 'resource']);
      return fresh ? key.doNothing() : key.doUpdateSet({ ...values, updated_at: sql<Date>`now()` });
    })
    .executeTakeFirst();
  return (result.numInsertedOrUpdatedRows ?? 0n) > 0n;
}

/**
 * Records in the ledger what a writer's proofs found since it last did (days reopened, days
 * proved), in a transaction of its own; what the ledger did not take stays due. Returns the days
 * reopened it recorded.
 */
export async function recordSessionProofs(
  pool: pg.Pool,
  key: { sourceId: string; resource: WindowedResource },
  session: ReadingSession,
): Promise<number> {
  const found = takeProofs(session);
  if (found.reopened.length + found.proved.length === 0) return 0;
  await inTransaction(pool, (trx) => recordProofs(trx, key, found)).catch((error: unknown) => {
    giveBackProofs(session, found);
    throw error;
  });
  ledgerTook(session, found);
  return found.reopened.length;
}

/**
 * Learns the resource's reading again, an answer or another worker having proved it stale, and
 * records at once the days this writer settled since its last proof, reopened (the run reads them
 * again): a queued run's worker may have no next window of the resource to record them with.
 * `relearned` runs as soon as the reading is learned again, before the ledger is written: another
 * window of the process, sharing the knowledge, may tell or hear verdicts meanwhile. Returns the
 * days reopened.
 */
export function relearnAndReopen(
  pool: pg.Pool,
  key: { sourceId: string; resource: WindowedResource },
  knowledge: ResourceKnowledge,
  relearned?: () => void,
): Promise<number> {
  staleElsewhere(knowledge);
  relearned?.();
  return recordSessionProofs(pool, key, sessionOf(knowledge));
}
