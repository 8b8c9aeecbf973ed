import { ApiError } from '../../src/errors.js';
import {
  newDayFetch,
  planDay,
  planRunProof,
  reopenUncoveredSettled,
  sessionOf,
  staleElsewhere,
} from '../../src/extract/day-plan.js';
import type {
  Answer,
  FetchedDay,
  LimitPolicy,
  Plan,
  ResourceKnowledge,
} from '../../src/extract/plan-steps.js';
import { holdSettled, newSession, stretchEnds, takeReopened } from '../../src/extract/reading-session.js';
import {
  atCap,
  type BoundItemTimes,
  boundItemTimes,
  emptyReading,
  endInclusive,
  handedOn,
  type ServerReading,
  serverDay,
  startFrom,
  startInclusive,
} from '../../src/extract/server-reading.js';
import type { DayItems } from '../../src/simulator/day-data.js';
import { createRandom, hashSeed, type Random } from '../../src/simulator/random.js';
import { DEFAULT_SETTINGS, type ServingSettings } from '../../src/simulator/settings.js';
import { parseWindowQuery, selectWindow, type WindowSource } from '../../src/simulator/window-query.js';
import { addDays, DAY_MS, type DayString, dayStartMs, daysFrom } from '../../src/time/days.js';
import { changedPairs, type ServedReading } from '../helpers/sim-readings.js';

/**
 * The search for days loaded short after a server changed its reading between runs, without HTTP
 * or a database: a day's plan (day-plan.ts) is driven against the simulator's own window logic
 * (selectWindow) over a quiet data set, and what each day holds is compared with the truth.
 */

export interface QuietItem {
  id: string;
  dt: string;
}

/**
 * How many items a day holds: 0 to `most`, and on a `busy` share of days `least` to `busiest`
 * (above a cap of 30, so such a day is read in time slices where instants are honoured).
 */
export interface DaySizes {
  most: number;
  /** Fewest items a day holds (0 unless said). */
  least?: number;
  busy?: { share: number; least: number; busiest: number };
  /** Days that hold nothing, whatever the sizes draw. */
  empty?: readonly DayString[];
  /** Days that hold exactly so many items, whatever the sizes draw (a benchmark's days replayed). */
  exact?: Readonly<Partial<Record<DayString, number>>>;
}

export const QUIET: DaySizes = { most: 3 };

/**
 * Each day's items as drawn, by seed, day and sizes: a search builds several servers on the same
 * seed (a run's steady twin, the server before and after a change), and drawing and rendering
 * their items again was a sixth of its time. Items are never changed once drawn (answers copy
 * them); emptied past a bound, as a long search meets many seeds.
 */
const drawn = new Map<string, QuietItem[]>();
const DRAWN_KEPT = 20_000;

function dayItems(seed: number, day: DayString, sizes: DaySizes, sizesKey: string): QuietItem[] {
  const key = `${seed}|${day}|${sizesKey}`;
  const known = drawn.get(key);
  if (known !== undefined) return known;
  const rng = createRandom(hashSeed(seed, 'quiet', day));
  const { busy } = sizes;
  const exact = sizes.exact?.[day];
  const count =
    exact !== undefined
      ? exact
      : sizes.empty?.includes(day)
        ? 0
        : busy !== undefined && rng.chance(busy.share)
          ? rng.int(busy.least, busy.busiest)
          : rng.int(sizes.least ?? 0, sizes.most);
  const times = Array.from({ length: count }, () => rng.int(0, DAY_MS - 1)).sort((a, b) => a - b);
  const start = dayStartMs(day);
  const items = times.map((offset, i) => ({ id: `${day}#${i}`, dt: new Date(start + offset).toISOString() }));
  if (drawn.size >= DRAWN_KEPT) drawn.clear();
  drawn.set(key, items);
  return items;
}

/**
 * A server over `from..to`, each day's items drawn from `seed` (quiet by default: 0 to 3 a day),
 * served under a reading: instants in startdate and enddate as the reading says (refused when it
 * says nothing), as the simulator's route plays them.
 */
export class QuietServer {
  requests = 0;
  /**
   * Where the proofs of a run on this server start among their limits (reading-session.ts,
   * proofLimit): of the seed, as everything else here, so that a case plays the same requests
   * each time and a case a search found replays.
   */
  proofSalt: number;
  /** Requests that asked with instants (time slices) and were honoured. */
  instantRequests = 0;
  /** Called with every request and its answer: a search's failure can be replayed and read. */
  log?: (line: string) => void;
  private readonly days = new Map<DayString, QuietItem[]>();
  private readonly itemsOf: (day: DayString) => QuietItem[];
  private readonly source: WindowSource;
  private shuffles: Random;

  constructor(
    seed: number,
    from: DayString,
    to: DayString,
    public reading: ServedReading,
    sizes: DaySizes = QUIET,
  ) {
    // Drawn as first asked: a run reads a third of the days a search's server holds.
    const sizesKey = JSON.stringify(sizes);
    this.itemsOf = (day) => {
      let items = this.days.get(day);
      if (items === undefined) {
        items = day < from || day > to ? [] : dayItems(seed, day, sizes, sizesKey);
        this.days.set(day, items);
      }
      return items;
    };
    this.source = {
      from,
      to,
      day: (day) => ({ feedback: this.itemsOf(day), survey: [], recordings: [] }) as unknown as DayItems,
    };
    this.shuffles = createRandom(hashSeed(seed, 'order'));
    this.proofSalt = hashSeed(seed, 'proof salt') % 2 ** 30;
  }

  itemsOn(day: DayString): string[] {
    return this.itemsOf(day)
      .map((item) => item.id)
      .sort();
  }

  /** The answer to one request, as the simulator's route gives it (a 400 above the maximum limit). */
  answer(range: { startdate: string; enddate: string }, limit: number): Answer {
    this.requests += 1;
    const instants = range.startdate.length > 10 || range.enddate.length > 10;
    if (instants && this.reading.instants === 'honoured') this.instantRequests += 1;
    const { maxLimit } = this.reading;
    const settings: ServingSettings = { ...DEFAULT_SETTINGS, ...this.reading };
    const parsed = parseWindowQuery(range, settings.instants);
    if ((maxLimit !== null && limit > maxLimit) || !parsed.ok) {
      this.log?.(`${range.startdate}..${range.enddate} limit ${limit}: HTTP 400`);
      return { kind: 'failed', error: new ApiError('HTTP 400', { status: 400 }, { retryable: false }) };
    }
    const query = { ...parsed.query, limit };
    const items = selectWindow(this.source, 'feedback', query, settings, this.shuffles);
    this.log?.(
      `${range.startdate}..${range.enddate} limit ${limit}: ${items.length} ${JSON.stringify((items as unknown as QuietItem[]).map((item) => item.dt.slice(5, 16)))}`,
    );
    return { kind: 'items', items: (items as unknown as QuietItem[]).map((item) => ({ ...item })) };
  }
}

export const POLICY: LimitPolicy = { limit: 1000, maxLimit: 10_000 };

/** Fetches one day by its plan against the server, sending every request it yields. */
export function fetchDaySync(
  server: QuietServer,
  day: DayString,
  knowledge: ResourceKnowledge,
  /** An earlier run settled the day empty (day-plan.ts, emptyFirst). */
  emptyBefore = false,
  /** Items earlier runs stored of the day. */
  itemsBefore = 0,
): FetchedDay {
  seedSession(server, knowledge);
  return answerPlan(
    server,
    planDay(newDayFetch('feedback', day, POLICY, knowledge, false, emptyBefore, itemsBefore)),
  );
}

/** A run's session on `server`, made on first use with the server's proof salt (its seed's). */
export function seedSession(server: QuietServer, knowledge: ResourceKnowledge): void {
  knowledge.session ??= newSession(server.proofSalt);
}

/**
 * Sends every request a plan yields to the server, one at a time, until the plan finishes; plans
 * it would drive side by side, one after the other.
 */
export function answerPlan<T>(server: QuietServer, plan: Plan<T>): T {
  let step = plan.next();
  while (!step.done) {
    const wanted = step.value;
    if (wanted.kind === 'wait') throw new Error('one window at a time never waits');
    if (wanted.kind === 'all') {
      for (const part of wanted.plans) answerPlan(server, part);
      step = plan.next({ kind: 'waited' });
      continue;
    }
    step = plan.next(server.answer(wanted.range, wanted.limit));
  }
  return step.value;
}

/** What a run starts from: the stored reading (run-sync's readServerReadings: cap and size learned again). */
export function storedKnowledge(
  reading: ServerReading,
  checked = false,
  items: BoundItemTimes = boundItemTimes(reading),
): ResourceKnowledge {
  // As stored (reading-store.ts: with the reach of a move the run saw, and the items its bounds
  // rest on), then loaded.
  const loaded = startFrom({ ...reading }, handedOn(reading), items);
  return {
    reading: loaded,
    ...(checked ? { staleChecked: true } : {}),
  };
}

export interface Tally {
  /** Days settled whole (not flagged) with fewer items than the server holds for them. */
  short: string[];
  /** Of `short`, the days whose fetch read time slices (instants the server honoured). */
  sliced: string[];
  flagged: number;
  /** Of `flagged`, the days that held every item of theirs all the same (false alarms). */
  wholeFlagged: number;
  days: number;
  requests: number;
  /** Days a run's proofs reopened, pass by pass (readRun). */
  reopened: number;
  /** Days still reopened after a run's last pass: the ledger keeps them for the next run, unsettled. */
  left: number;
  /**
   * Cases whose reading stored after the backfill still says what the new server contradicts: an
   * exclusive bound taken as inclusive, or another server day taken for UTC's.
   */
  staleStored: number;
}

export function emptyReadingTally(): Tally {
  return {
    short: [],
    sliced: [],
    flagged: 0,
    wholeFlagged: 0,
    days: 0,
    requests: 0,
    reopened: 0,
    left: 0,
    staleStored: 0,
  };
}

/** The run's last proof (day-plan.ts, planRunProof), sent to the server: the days it reopens. */
export function finishRun(server: QuietServer, knowledge: ResourceKnowledge): DayString[] {
  seedSession(server, knowledge);
  return answerPlan(server, planRunProof('feedback', POLICY, knowledge, TODAY));
}

/** Passes a run reads: its own, and the reopen passes after it (run-sync.ts, REOPEN_PASSES). */
export const RUN_PASSES = 4;

/** What the last read of a day left: settled whole, or flagged. */
export interface DayResult {
  truncated: boolean;
  ids: Set<string>;
}

/** What one read of a day cost: every request its plan asked, and of those, the session's proofs. */
export interface DayCost {
  requests: number;
  proofRequests: number;
}

/** What the sync's ledger tells each read of a run (run-sync.ts, daysBefore), and the run's name. */
export interface RunLedger {
  /** Days an earlier run settled empty. */
  emptyBefore?: ReadonlySet<DayString>;
  /** Items earlier runs stored of each day (the ledger's item_count). */
  itemsBefore?: ReadonlyMap<DayString, number>;
  /** Names the run in the server's replay log, beside each day read and its outcome. */
  label?: string;
  /**
   * false: no writer makes a last proof of its own (a queued run's workers do not; its planner
   * proves from the ledger, which this plays for caps, days settled at a size a cap proved since
   * may have cut read again, as queue-proof.ts's reopenUncapped has them, and for the days after
   * the run's stretches: plannerProof).
   */
  lastProofs?: boolean;
  /**
   * Given, the warehouse's check of a day's whole answer is played (store_window, migration 0053):
   * one lacking an item the run stored of the day from another answer flags and reopens the day,
   * and its writer learns the reading again. These are the items earlier runs stored: the run
   * does not change their rows again (quiet items never change), so they are not the run's.
   */
  storedBefore?: ReadonlySet<string>;
}

/**
 * One run, as the sync's: reads `days` in order, each on the knowledge its writer holds (one
 * knowledge, or `knowledgeOf(i)`, asked in order, as a queued run's workers join), closes the pass
 * with each writer's last proof (where one of them found the reading stale, it judges the other
 * writers' days too, as a queued run's planner does), and reads again whatever those reopen, on
 * the first writer's knowledge, until nothing is reopened or RUN_PASSES are spent. Returns the
 * last result per day (and the days whose last read asked time slices the server honoured), and
 * the days still reopened after the last pass, which the sync leaves reopened in the ledger for
 * the next run: not settled. `onDay` hears what each read cost (a benchmark counts the requests of
 * empty days).
 */
export function readRun(
  server: QuietServer,
  days: readonly DayString[],
  knowledgeOf: ResourceKnowledge | ((i: number) => ResourceKnowledge),
  onDay?: (day: DayString, cost: DayCost) => void,
  ledger: RunLedger = {},
): {
  results: Map<DayString, DayResult>;
  sliced: Set<DayString>;
  reopened: number;
  left: DayString[];
  /** Every item the run's answers served, of its days and their neighbours: the rows it stored. */
  stored: Set<string>;
} {
  const { emptyBefore = new Set(), itemsBefore = new Map(), label, storedBefore } = ledger;
  const mark = (line: string) => {
    if (label !== undefined) server.log?.(`${label}: ${line}`);
  };
  const writerOf = typeof knowledgeOf === 'function' ? knowledgeOf : () => knowledgeOf;
  const results = new Map<DayString, DayResult>();
  const sliced = new Set<DayString>();
  /** Per day settled whole, the size no cap its writer knew covered (the ledger's uncapped_served). */
  const uncapped = new Map<DayString, number>();
  const warehouse = new RunWarehouse(storedBefore);
  /** Each day's last read, by its number in the run (RunWarehouse). */
  const lastRead = new Map<DayString, number>();
  /** Days the warehouse reopened, and those the writers it told reopened (run-window.ts). */
  const storeReopened = new Set<DayString>();
  /** Days whose last read was flagged while the reading changed: the ledger holds them reopened. */
  const flaggedAmidChange = new Set<DayString>();
  const read = (day: DayString, knowledge: ResourceKnowledge) => {
    mark(day);
    const before = {
      requests: server.requests,
      slices: server.instantRequests,
      proofRequests: knowledge.session?.proofs.requests ?? 0,
    };
    const fetched = fetchDaySync(server, day, knowledge, emptyBefore.has(day), itemsBefore.get(day));
    onDay?.(day, {
      requests: server.requests - before.requests,
      proofRequests: (knowledge.session?.proofs.requests ?? 0) - before.proofRequests,
    });
    const ids = new Set(fetched.onDay.map((item) => (item as QuietItem).id));
    const { lacking, at } = warehouse.store(day, ids, fetched);
    mark(
      `${day} ${fetched.truncated || lacking ? 'flagged' : 'whole'}, ${fetched.onDay.length} of ${server.itemsOn(day).length} items`,
    );
    results.set(day, { truncated: fetched.truncated || lacking, ids });
    // Flagged while the reading changed: the ledger holds it reopened, for the next run.
    if (fetched.readAgain === true) flaggedAmidChange.add(day);
    else flaggedAmidChange.delete(day);
    lastRead.set(day, at);
    if (lacking) {
      staleElsewhere(knowledge);
      for (const again of [day, ...takeReopened(sessionOf(knowledge))]) storeReopened.add(again);
    }
    if (fetched.uncappedServed === undefined || fetched.truncated || lacking) uncapped.delete(day);
    else uncapped.set(day, fetched.uncappedServed);
    if (server.instantRequests > before.slices) sliced.add(day);
    else sliced.delete(day);
  };
  const writers: ResourceKnowledge[] = [];
  days.forEach((day, i) => {
    const knowledge = writerOf(i);
    if (!writers.includes(knowledge)) writers.push(knowledge);
    read(day, knowledge);
  });
  const reader = writers[0];
  let reopened = 0;
  const close = (closing: readonly ResourceKnowledge[]) => {
    mark("the run's last proofs");
    const proving = ledger.lastProofs === false ? [] : closing;
    const pending = new Set(proving.flatMap((writer) => finishRun(server, writer)));
    // Without the writers' own last proofs, what a queued run's planner does for caps: a day
    // settled at a size a cap any writer proved since may have cut is read again.
    if (ledger.lastProofs === false)
      for (const [day, size] of uncapped)
        if (writers.some((writer) => atCap(writer.reading, size))) pending.add(day);
    for (const day of judgedByPlanner(closing)) pending.add(day);
    if (ledger.lastProofs === false && closing.length > 0) {
      const settled = [...results].filter(([, result]) => !result.truncated).map(([day]) => day);
      const held = (day: DayString) => {
        const result = results.get(day);
        return result === undefined ? [] : warehouse.timesOf(day, result, lastRead.get(day) ?? 0);
      };
      const stored = closing[closing.length - 1] as ResourceKnowledge;
      for (const day of plannerProof(server, stored, settled, new Set(days), held)) pending.add(day);
    }
    for (const day of storeReopened) pending.add(day);
    storeReopened.clear();
    reopened += pending.size;
    return [...pending].sort();
  };
  let pending = close(writers);
  for (let pass = 1; reader !== undefined && pass < RUN_PASSES && pending.length > 0; pass++) {
    mark(`reopened ${pending.join(' ')}`);
    for (const day of pending) read(day, reader);
    pending = close([reader]);
  }
  for (const [day, result] of results) result.ids = warehouse.rowsOf(day, result, lastRead.get(day) ?? 0);
  const left = [...new Set([...pending, ...flaggedAmidChange])].sort();
  return { results, sliced, reopened, left, stored: warehouse.served };
}

/**
 * What the warehouse makes of a run's answers (store_window), played where the run is told what
 * earlier runs stored (RunLedger.storedBefore): every item an answer serves is stored, a
 * neighbouring day's too; a day's whole answer (not flagged, holding an item) marks the rows of the
 * day it lacks absent, unless it lacks one the run stored (migration 0053): then the day is
 * flagged and reopened instead. Without storedBefore, a day holds what its last read held.
 */
class RunWarehouse {
  /** Every item the run's answers served. */
  readonly served = new Set<string>();
  private reads = 0;
  /** Per UTC day, each item the run's answers served of it, and the read that last served it. */
  private readonly lastServed = new Map<DayString, Map<string, number>>();

  constructor(private readonly before: ReadonlySet<string> | undefined) {}

  /** A read of `day`: whether the warehouse refused its answer as whole, and the read's number. */
  store(day: DayString, ids: ReadonlySet<string>, fetched: FetchedDay): { lacking: boolean; at: number } {
    const at = ++this.reads;
    const before = this.before;
    const lacking =
      before !== undefined &&
      !fetched.truncated &&
      ids.size > 0 &&
      // A row an earlier run stored is not changed by this one: not the run's evidence.
      [...(this.lastServed.get(day)?.keys() ?? [])].some((id) => !before.has(id) && !ids.has(id));
    for (const item of [...fetched.onDay, ...fetched.otherDays] as QuietItem[]) {
      this.served.add(item.id);
      this.times.set(item.id, Date.parse(item.dt));
      const of = item.dt.slice(0, 10) as DayString;
      const served = this.lastServed.get(of) ?? new Map<string, number>();
      served.set(item.id, at);
      this.lastServed.set(of, served);
    }
    return { lacking, at };
  }

  /** The dt (ms) of each item the run's answers served. */
  private readonly times = new Map<string, number>();

  /** The times of the rows of `day` the warehouse holds now (rowsOf), as the planner reads them. */
  timesOf(day: DayString, last: DayResult, readAt: number): number[] {
    return [...this.rowsOf(day, last, readAt)].flatMap((id) => this.times.get(id) ?? []);
  }

  /**
   * The rows of `day` the warehouse shows after the run, given its last read (its result, and its
   * number): the items it held, and those answers served after it (stored, or their marks
   * cleared); a flagged day keeps every row the run stored of it.
   */
  rowsOf(day: DayString, last: DayResult, readAt: number): Set<string> {
    if (this.before === undefined) return last.ids;
    const rows = new Set(last.ids);
    for (const [id, at] of this.lastServed.get(day) ?? []) if (at > readAt || last.truncated) rows.add(id);
    return rows;
  }
}

/**
 * A queued run's planner asks, from the ledger, the day after each stretch of the days the run
 * settled (src/sync/queue-proof.ts, proveEndpoint: stretchEnds, holdSettled, its last proof), on
 * the reading the workers stored (`stored`: the last writer's): each stretch's last day held as the
 * warehouse holds it, so a next day's answer serving more of it reopens it. The days it reopens.
 * Its proof of the days no worker proved, on a canary the ledger names, is not played.
 */
function plannerProof(
  server: QuietServer,
  stored: ResourceKnowledge,
  settled: readonly DayString[],
  planned: ReadonlySet<DayString>,
  held: (day: DayString) => number[],
): DayString[] {
  // The workers' reading as the planner loads it from server_readings.
  const planner = storedKnowledge(structuredClone(stored.reading), true, boundItemTimes(stored.reading));
  seedSession(server, planner);
  const session = sessionOf(planner);
  for (const day of stretchEnds(settled, new Set([...settled, ...planned]), TODAY))
    holdSettled(session, day, held(day));
  return answerPlan(server, planRunProof('feedback', POLICY, planner, TODAY));
}

/**
 * A queued run's planner judges every day the run settled, whichever worker settled it, by the
 * reading a stale verdict made a worker learn again, or by one whose requests a zone's move took
 * past its evidence (src/sync/queue-proof.ts, proveEndpoint; the workers' verdicts and readings
 * meet in the database): that writer judges the days the others settled, on the requests they
 * asked. The days it reopens.
 */
function judgedByPlanner(writers: readonly ResourceKnowledge[]): DayString[] {
  const moved = (writer: ResourceKnowledge) => {
    const reach = handedOn(writer.reading);
    return reach.startMs !== undefined || reach.endMs !== undefined;
  };
  const judge = writers.find((writer) => (writer.relearned ?? 0) > 0) ?? writers.find(moved);
  if (judge === undefined || writers.length < 2) return [];
  const others = writers
    .filter((writer) => writer !== judge)
    .flatMap((writer) =>
      [...sessionOf(writer).settledBy].map(([day, under]) => ({
        day,
        range: under.range,
        ...(under.parts === true ? { parts: true } : {}),
      })),
    );
  reopenUncoveredSettled(judge, others);
  return takeReopened(sessionOf(judge));
}

/**
 * One run of a case (readRun), tallied: a day judged by its last read; one still reopened after
 * the last pass is left to the next run, not settled, unless it is flagged too. `storedBefore`:
 * the items earlier runs stored (RunWarehouse). Returns those and the items this run stored.
 */
function readPhase(
  server: QuietServer,
  days: readonly DayString[],
  knowledgeOf: (i: number) => ResourceKnowledge,
  tally: Tally,
  label: string,
  storedBefore?: ReadonlySet<string>,
): Set<string> {
  const before = server.requests;
  const run = readRun(server, days, knowledgeOf, undefined, {
    label,
    ...(storedBefore === undefined ? {} : { storedBefore }),
  });
  tally.reopened += run.reopened;
  tally.left += run.left.length;
  for (const [day, result] of run.results) {
    // Reopened, not flagged: read again by the next run, not judged here.
    if (run.left.includes(day) && !result.truncated) continue;
    tally.days += 1;
    if (result.truncated) tally.flagged += 1;
    const lacks = server.itemsOn(day).some((id) => !result.ids.has(id));
    if (result.truncated && !lacks) tally.wholeFlagged += 1;
    if (!result.truncated && lacks) {
      tally.short.push(`${label} ${day}`);
      if (run.sliced.has(day)) tally.sliced.push(`${label} ${day}`);
    }
  }
  tally.requests += server.requests - before;
  return new Set([...(storedBefore ?? []), ...run.stored]);
}

function contradicted(reading: ServerReading, served: ServedReading): boolean {
  return (
    (served.startdate === 'exclusive' && startInclusive(reading)) ||
    (served.enddate === 'exclusive' && endInclusive(reading)) ||
    (served.dayOffsetMinutes !== 0 && serverDay(reading) === 'utc')
  );
}

export const TODAY = '2026-11-20';

/**
 * One case: reading A learned by a first load, the server then plays B; a backfill of days never
 * loaded (newest first, as a queued one, or oldest first, by the case's seed), split between a
 * writer that checks the stored reading and one that trusts that check (a queued run's later
 * worker), then a nightly sync of the last three days. Counts the short days of the last two runs,
 * each stored into what the runs before it stored (RunWarehouse: a day's whole answer lacking an
 * item the same run stored of it is flagged and reopened, as store_window() does).
 */
export function playCase(
  seed: number,
  before: ServedReading,
  after: ServedReading,
  tally: Tally,
  sizes: DaySizes = QUIET,
  /** Every request and its answer, to replay a case the search names. */
  log?: (line: string) => void,
): void {
  const rng = createRandom(hashSeed(seed, 'case'));
  const server = new QuietServer(seed, addDays(TODAY, -40), addDays(TODAY, 5), before, sizes);
  if (log !== undefined) server.log = log;
  const first = storedKnowledge(emptyReading());
  const firstDays = daysFrom(addDays(TODAY, -30), addDays(TODAY, -22));
  const firstStored = readPhase(server, firstDays, () => first, emptyReadingTally(), 'first');

  server.reading = after;
  const stored = first.reading;
  const backfill = daysFrom(addDays(TODAY, -20), addDays(TODAY, -5));
  if (rng.chance(0.5)) backfill.reverse();
  const checker = storedKnowledge(stored);
  // A writer that joins later (a queued run's worker) starts from what the checker stored, and
  // trusts its check once it was recorded; it takes every third day.
  let trusting: ResourceKnowledge | undefined;
  const writerOf = (i: number): ResourceKnowledge => {
    if (i % 3 !== 2) return checker;
    trusting ??= storedKnowledge(checker.reading, checker.staleChecked === true);
    return trusting;
  };
  const backfillStored = readPhase(server, backfill, writerOf, tally, 'backfill', firstStored);

  if (contradicted(checker.reading, after)) tally.staleStored += 1;
  const nightly = storedKnowledge(checker.reading);
  readPhase(
    server,
    daysFrom(addDays(TODAY, -3), addDays(TODAY, -1)),
    () => nightly,
    tally,
    'nightly',
    backfillStored,
  );
}

/**
 * Plays a case per pair (changedPairs unless given); every short day is named, the first of a
 * case with its pair.
 */
export function search(
  count: number,
  seed: number,
  sizes: DaySizes = QUIET,
  pairs: (count: number, seed: number) => [ServedReading, ServedReading][] = changedPairs,
): Tally {
  const tally = emptyReadingTally();
  pairs(count, seed).forEach(([before, after], i) => {
    const found = tally.short.length;
    playCase(seed + i, before, after, tally, sizes);
    if (tally.short.length > found)
      tally.short[tally.short.length - 1] += ` (${JSON.stringify(before)} -> ${JSON.stringify(after)})`;
  });
  return tally;
}
