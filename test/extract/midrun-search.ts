import fc from 'fast-check';
import type { Answer, ResourceKnowledge } from '../../src/extract/plan-steps.js';
import { emptyReading } from '../../src/extract/server-reading.js';
import { createRandom, hashSeed, type Random } from '../../src/simulator/random.js';
import { addDays, type DayString, daysFrom } from '../../src/time/days.js';
import type { ServedReading } from '../helpers/sim-readings.js';
import {
  type DayResult,
  type DaySizes,
  QuietServer,
  readRun,
  storedKnowledge,
  TODAY,
} from './reading-search.js';

/**
 * The search for days settled short, or flags lost, when a server changes its reading while the
 * tool reads (SPEC-GAPS: "a reading that changes"). Three kinds of change, each on the day plan's
 * own logic against the simulator's window logic, without HTTP or a database:
 *  - mid-run: a deploy at a random request of a backfill;
 *  - flapping: a rolling deploy, where old and new readings answer at random for a stretch of
 *    requests before the new one stays;
 *  - between runs: a first backfill learns one reading, the server is restarted with another, and
 *    a backfill of older days follows.
 * A run reads its days in order; days the run's reading session reopens (found settled under a
 * reading since proved stale) are read again, as the sync does.
 */

export type ChangeKind = 'mid-run' | 'flapping' | 'between-runs';

/**
 * A server whose reading is `before` until request `switchAt`, then flaps until `steadyAt`, then
 * `after`. With `sticky`, the old readers keep every request that starts (`stickyBy`: or ends) on
 * one of those days to the end: a cache or a balancer keyed by the address, the day's own requests
 * asked first there.
 */
export class SwitchingServer extends QuietServer {
  private readonly coin: Random;
  /** From this request on, `before` again: the deploy rolled back (rollingBack). */
  backAt = Infinity;

  constructor(
    seed: number,
    from: DayString,
    to: DayString,
    readonly before: ServedReading,
    readonly after: ServedReading,
    public switchAt: number,
    public steadyAt: number,
    sizes: DaySizes,
    readonly sticky: readonly DayString[] = [],
    /** The bound whose day the old readers key on: the request's start, or its end. */
    readonly stickyBy: 'start' | 'end' = 'start',
  ) {
    super(seed, from, to, before, sizes);
    this.coin = createRandom(hashSeed(seed, 'flap'));
  }

  override answer(range: { startdate: string; enddate: string }, limit: number): Answer {
    const n = this.requests;
    this.reading =
      n < this.switchAt ||
      n >= this.backAt ||
      this.sticky.includes(
        (this.stickyBy === 'end' ? range.enddate : range.startdate).slice(0, 10) as DayString,
      )
        ? this.before
        : n >= this.steadyAt
          ? this.after
          : this.coin.chance(0.5)
            ? this.before
            : this.after;
    return super.answer(range, limit);
  }
}

/**
 * A SwitchingServer whose deploy is rolled back `gap` requests after the new reading alone
 * answers (a mid-run deploy's switch, a rolling deploy's end): the old reading again to the end.
 */
export function rollingBack(gap: number): typeof SwitchingServer {
  return class RolledBack extends SwitchingServer {
    constructor(...args: ConstructorParameters<typeof SwitchingServer>) {
      super(...args);
      this.backAt = this.steadyAt + gap;
    }
  };
}

export interface MidrunTally {
  cases: number;
  days: number;
  /** Days settled whole (not flagged) with fewer items than the server holds for them. */
  short: string[];
  /** Of those, days above the cap: a flag the day should carry, lost. */
  lostFlags: string[];
  flagged: number;
  /** Days still reopened after the run's last pass: the ledger keeps them for the next run. */
  left: number;
  requests: number;
  /** Requests an ideal reader asks: one per day read. */
  ideal: number;
  reopened: number;
}

export function emptyTally(): MidrunTally {
  return {
    cases: 0,
    days: 0,
    short: [],
    lostFlags: [],
    flagged: 0,
    left: 0,
    requests: 0,
    ideal: 0,
    reopened: 0,
  };
}

/** Prints what a search found under `label`: its counts, its request cost, and each day short. */
export function printTally(label: string, tally: MidrunTally): void {
  console.info(
    `${label}: ${tally.cases} cases, ${tally.days} days, ${tally.short.length} short, ${tally.lostFlags.length} flags lost, ${tally.flagged} flagged, ${tally.left} left reopened for the next run, ${tally.reopened} reopened, ${(tally.requests / tally.ideal).toFixed(2)} requests a day`,
  );
  for (const day of tally.short) console.info(`  short: ${day}`);
}

function tallyRun(
  server: QuietServer,
  run: { results: Map<DayString, DayResult>; left: readonly DayString[] },
  cap: number,
  tally: MidrunTally,
  label: string,
): void {
  for (const [day, result] of run.results) {
    tally.days += 1;
    tally.ideal += 1;
    if (run.left.includes(day)) {
      // Flagged and reopened (read while the reading changed): flagged too.
      tally.left += 1;
      if (result.truncated) tally.flagged += 1;
      continue;
    }
    if (result.truncated) {
      tally.flagged += 1;
      continue;
    }
    const truth = server.itemsOn(day);
    const lacks = truth.filter((id) => !result.ids.has(id)).length;
    if (lacks === 0) continue;
    const name = `${label} ${day}: ${result.ids.size} of ${truth.length}`;
    tally.short.push(name);
    if (truth.length > cap) tally.lostFlags.push(name);
  }
}

/**
 * A SwitchingServer behind a cache keyed by the address: a request asked before the deploy is
 * answered as it was then, to the run's end (a proof asking a request again, a canary, hears the
 * old reading); a request new since hears the new one.
 */
export class CachedServer extends SwitchingServer {
  /** The answers kept, by address; runs that share it share the cache. */
  kept = new Map<string, Answer>();
  /** Requests the cache answered. */
  hits = 0;

  override answer(range: { startdate: string; enddate: string }, limit: number): Answer {
    const key = `${range.startdate}/${range.enddate}/${limit}`;
    const before = this.requests < this.switchAt;
    const kept = this.kept.get(key);
    if (kept !== undefined && this.answersFromCache(before)) {
      this.requests += 1;
      this.hits += 1;
      return copyAnswer(kept);
    }
    const answer = super.answer(range, limit);
    if (kept === undefined && this.keepsAnswer(before)) this.kept.set(key, copyAnswer(answer));
    return answer;
  }

  /** Whether the cache answers a request it holds (`before`: the deploy has not come yet). */
  protected answersFromCache(before: boolean): boolean {
    return !before;
  }

  /** Whether the cache keeps the server's answer to a request it does not hold. */
  protected keepsAnswer(before: boolean): boolean {
    return before;
  }
}

/**
 * A cache in front of the service that keeps every answer, keyed on the whole address, from one
 * run to the next (a CDN with a long lifetime): the first answer to an address is the answer to
 * it ever after, before a deploy or after it.
 */
export class KeptAnswersServer extends CachedServer {
  protected override answersFromCache(): boolean {
    return true;
  }

  protected override keepsAnswer(): boolean {
    return true;
  }
}

function copyAnswer(answer: Answer): Answer {
  return answer.kind === 'items'
    ? { kind: 'items', items: answer.items.map((item) => ({ ...(item as object) })) }
    : answer;
}

export interface MidrunCase {
  kind: ChangeKind;
  before: ServedReading;
  after: ServedReading;
  sizes: DaySizes;
  /** Where the change comes, as a share of the run's first reading's requests. */
  at: number;
}

/** The data a case's server holds, and the days its run reads. */
const MIDRUN_FROM = addDays(TODAY, -60);
const MIDRUN_TO = addDays(TODAY, 5);
const MIDRUN_DAYS = daysFrom(addDays(TODAY, -20), addDays(TODAY, -1));

/** The requests of a first read of a case's days on its steady `before` reading: the run's size. */
export function steadyLength(seed: number, c: MidrunCase): number {
  const probe = new SwitchingServer(
    seed,
    MIDRUN_FROM,
    MIDRUN_TO,
    c.before,
    c.before,
    Infinity,
    Infinity,
    c.sizes,
  );
  readRun(probe, MIDRUN_DAYS, storedKnowledge(emptyReading()));
  return Math.max(1, probe.requests);
}

/**
 * Plays one case; adds what it finds to `tally`, each short day named with its case. `Server`: the
 * kind of server the run reads (a SwitchingServer, or one behind a cache); returns the one it read.
 * `length`: the run's size, which the change comes at a share of (steadyLength).
 */
export function playMidrun(
  seed: number,
  c: MidrunCase,
  tally: MidrunTally,
  Server: typeof SwitchingServer = SwitchingServer,
  length = steadyLength(seed, c),
): SwitchingServer {
  const rng = createRandom(hashSeed(seed, 'midrun'));
  const from = MIDRUN_FROM;
  const to = MIDRUN_TO;
  const days = MIDRUN_DAYS;
  const label = `seed ${seed} ${c.kind} ${JSON.stringify(c.before)} -> ${JSON.stringify(c.after)}`;
  const switchAt = c.kind === 'between-runs' ? 0 : Math.floor(c.at * length);
  const steadyAt =
    c.kind === 'flapping' ? switchAt + Math.max(8, Math.floor((length * rng.int(20, 60)) / 100)) : switchAt;
  const cap = Math.min(c.before.cap, c.after.cap);
  let server: SwitchingServer;
  let run: ReturnType<typeof readRun>;
  if (c.kind === 'between-runs') {
    const first = new SwitchingServer(seed, from, to, c.before, c.before, Infinity, Infinity, c.sizes);
    const knowledge = storedKnowledge(emptyReading());
    readRun(first, days, knowledge);
    server = new SwitchingServer(seed, from, to, c.before, c.after, 0, 0, c.sizes);
    const older = daysFrom(addDays(TODAY, -45), addDays(TODAY, -21));
    run = readRun(server, older, storedKnowledge(knowledge.reading));
  } else {
    server = new Server(seed, from, to, c.before, c.after, switchAt, steadyAt, c.sizes);
    run = readRun(server, days, storedKnowledge(emptyReading()));
  }
  tallyRun(server, run, cap, tally, label);
  tally.reopened += run.reopened;
  tally.requests += server.requests;
  tally.cases += 1;
  return server;
}

/**
 * A rolling deploy under way as a run starts from the reading an earlier run stored: a first
 * backfill learns `before`, then a backfill of older days meets both readings at random for its
 * first 20 to 60 requests, then `after` alone. The run never saw the old reading held still.
 */
export function playStoredFlap(
  seed: number,
  c: MidrunCase,
  tally: MidrunTally,
  options: Pick<RereadOptions, 'workers'> = {},
): void {
  const { workers = 1 } = options;
  const rng = createRandom(hashSeed(seed, 'stored flap'));
  const from = addDays(TODAY, -60);
  const to = addDays(TODAY, 5);
  const label = `seed ${seed} stored-flapping ${JSON.stringify(c.before)} -> ${JSON.stringify(c.after)}`;
  const first = new SwitchingServer(seed, from, to, c.before, c.before, Infinity, Infinity, c.sizes);
  const knowledge = storedKnowledge(emptyReading());
  const firstRun = readRun(first, daysFrom(addDays(TODAY, -20), addDays(TODAY, -1)), knowledge);
  const server = new SwitchingServer(seed, from, to, c.before, c.after, 0, rng.int(20, 60), c.sizes);
  const run = readRun(
    server,
    daysFrom(addDays(TODAY, -45), addDays(TODAY, -21)),
    writersOf(seed, workers, knowledge.reading),
    undefined,
    { lastProofs: workers <= 1, storedBefore: firstRun.stored },
  );
  tallyRun(server, run, Math.min(c.before.cap, c.after.cap), tally, label);
  tally.reopened += run.reopened;
  tally.requests += server.requests;
  tally.cases += 1;
}

export interface RereadOptions {
  /** Days the first run settled empty are asked the widest request first (default). */
  hinted?: boolean;
  /** Both runs behind one cache that keeps every answer (KeptAnswersServer): the requests it answered. */
  keptAnswers?: boolean;
  /**
   * The second run's days dealt at random among this many writers, each on its own knowledge of
   * the stored reading, as a queued run's workers take them (each sees only the answers to its
   * own windows); each read told what the first run stored of its day, as a worker's job is.
   */
  workers?: number;
}

/**
 * The knowledge each read of a run from the stored `reading` goes by: one for the run, or, of
 * several writers, the one a seeded deal gives each read.
 */
function writersOf(
  seed: number,
  workers: number,
  reading: ResourceKnowledge['reading'],
): ResourceKnowledge | ((i: number) => ResourceKnowledge) {
  if (workers <= 1) return storedKnowledge(reading);
  // The stored reading's check is the run's, made once (migration 0049, shared run checks): the
  // first writer makes it, the others trust it.
  const writers = Array.from({ length: workers }, (_, i) => storedKnowledge(reading, i > 0));
  const deal = createRandom(hashSeed(seed, 'writers'));
  const dealt = new Map<number, ResourceKnowledge>();
  return (i) => {
    const writer = dealt.get(i) ?? (writers[deal.int(0, workers - 1)] as ResourceKnowledge);
    dealt.set(i, writer);
    return writer;
  };
}

/**
 * The same days read again by the next run (a lookback, a backfill repeated), from the reading the
 * first run stored, while the server changes its reading as playMidrun's does (at a share of the
 * first run's requests; between runs, before the second). Days the first run settled empty are
 * asked the widest request first (`hinted`, as the sync's ledger has it: day-plan.ts, emptyFirst);
 * of the two days the first run's server left empty whatever the sizes, one has items by the
 * second run, as late items would bring.
 */
export function playReread(
  seed: number,
  c: MidrunCase,
  tally: MidrunTally,
  options: RereadOptions = {},
): number {
  const { hinted = true, keptAnswers = false, workers = 1 } = options;
  const Server = keptAnswers ? KeptAnswersServer : SwitchingServer;
  const rng = createRandom(hashSeed(seed, 'reread'));
  const from = addDays(TODAY, -60);
  const to = addDays(TODAY, 5);
  const days = daysFrom(addDays(TODAY, -20), addDays(TODAY, -1));
  const [stillEmpty, filled] = [days[4] as DayString, days[12] as DayString];
  const label = `seed ${seed} reread ${c.kind} ${JSON.stringify(c.before)} -> ${JSON.stringify(c.after)}`;
  const sizes = { ...c.sizes, empty: [stillEmpty, filled] };
  const first = new Server(seed, from, to, c.before, c.before, Infinity, Infinity, sizes);
  const knowledge = storedKnowledge(emptyReading());
  const firstRun = readRun(first, days, knowledge);
  // What the ledger holds of each day: the items the first run stored, flagged or not.
  const stored = new Map(
    days
      .filter((day) => !firstRun.left.includes(day))
      .map((day) => [day, firstRun.results.get(day)?.ids.size ?? 0] as const),
  );
  const settledEmpty = new Set(
    days.filter((day) => {
      const result = firstRun.results.get(day);
      return (
        result !== undefined && !result.truncated && result.ids.size === 0 && !firstRun.left.includes(day)
      );
    }),
  );
  const length = Math.max(1, first.requests);
  const switchAt = c.kind === 'between-runs' ? 0 : Math.floor(c.at * length);
  const steadyAt =
    c.kind === 'flapping' ? switchAt + Math.max(8, Math.floor((length * rng.int(20, 60)) / 100)) : switchAt;
  // Behind a cache that keeps every answer, late items of a day settled empty are in no answer
  // of any address asked before: stale data no reader can see, not a reading's change.
  const again = { ...c.sizes, empty: keptAnswers ? [stillEmpty, filled] : [stillEmpty] };
  const server = new Server(seed, from, to, c.before, c.after, switchAt, steadyAt, again);
  // The next night's run: a start of its own among the proofs' limits, as the sync draws one.
  server.proofSalt = hashSeed(seed, 'proof salt', 'next run') % 2 ** 30;
  if (first instanceof KeptAnswersServer && server instanceof KeptAnswersServer) server.kept = first.kept;
  const hints = hinted ? settledEmpty : new Set<DayString>();
  const run = readRun(server, days, writersOf(seed, workers, knowledge.reading), undefined, {
    emptyBefore: hints,
    itemsBefore: stored,
    lastProofs: workers <= 1,
    storedBefore: firstRun.stored,
  });
  tallyRun(server, run, Math.min(c.before.cap, c.after.cap), tally, label);
  tally.reopened += run.reopened;
  tally.requests += server.requests;
  tally.cases += 1;
  return server instanceof KeptAnswersServer ? server.hits : 0;
}

/**
 * The search's changes during a run (its rolling deploys too, played as one deploy at their
 * point) behind a cache (CachedServer): of `count` cases, those not between runs, as playMidrun
 * plays them.
 */
export function cachedSearch(count: number, seed: number): MidrunTally & { hits: number } {
  const tally = { ...emptyTally(), hits: 0 };
  midrunCases(count, seed).forEach((c, i) => {
    if (c.kind === 'between-runs') return;
    const server = playMidrun(seed + i, { ...c, kind: 'mid-run' }, tally, CachedServer) as CachedServer;
    tally.hits += server.hits;
  });
  return tally;
}

/** The search's cases, each played as the same days read again by the next run (playReread). */
export function rereadSearch(
  count: number,
  seed: number,
  options: RereadOptions & { only?: number } = {},
): MidrunTally & { hits: number } {
  const tally = { ...emptyTally(), hits: 0 };
  midrunCases(count, seed).forEach((c, i) => {
    if (options.only === undefined || options.only === i)
      tally.hits += playReread(seed + i, c, tally, options);
  });
  return tally;
}

/**
 * The search's cases, each played as a rolling deploy under way as a run starts (playStoredFlap),
 * its days dealt to `workers` writers as a queued run's (RereadOptions).
 */
export function storedFlapSearch(
  count: number,
  seed: number,
  options: Pick<RereadOptions, 'workers'> & { only?: number } = {},
): MidrunTally {
  const tally = emptyTally();
  midrunCases(count, seed).forEach((c, i) => {
    if (options.only === undefined || options.only === i) playStoredFlap(seed + i, c, tally, options);
  });
  return tally;
}

const bound = fc.constantFrom('inclusive' as const, 'exclusive' as const);
const order = fc.constantFrom('oldest-first' as const, 'newest-first' as const, 'random' as const);
const instants = fc.constantFrom('honoured' as const, 'ignored' as const, 'refused' as const);
const zone = fc.constantFrom(0, 0, -300, 330, 120);

const reading: fc.Arbitrary<ServedReading> = fc.record({
  startdate: bound,
  enddate: bound,
  order,
  cap: fc.constantFrom(100, 1000),
  maxLimit: fc.constantFrom(null, 300),
  dayOffsetMinutes: zone,
  instants,
});

/** Every switch kind: one of the gaps changed (a bound, order, cap, zone, instants), or several. */
const changed: fc.Arbitrary<[ServedReading, ServedReading]> = fc
  .tuple(reading, reading, fc.integer({ min: 0, max: 6 }))
  .map(([a, b, field]): [ServedReading, ServedReading] => {
    const keys = ['startdate', 'enddate', 'order', 'cap', 'dayOffsetMinutes', 'instants'] as const;
    if (field === 6) return [a, b];
    const key = keys[field] as (typeof keys)[number];
    return [a, { ...a, [key]: b[key] }];
  })
  .filter(([a, b]) => JSON.stringify(a) !== JSON.stringify(b));

export const SIZES: Record<'quiet' | 'normal' | 'busy', DaySizes> = {
  quiet: { most: 3 },
  normal: { least: 20, most: 100 },
  busy: { least: 150, most: 400 },
};

export function midrunCases(count: number, seed: number): MidrunCase[] {
  return fc
    .sample(
      fc.record({
        kind: fc.constantFrom('mid-run' as const, 'flapping' as const, 'between-runs' as const),
        pair: changed,
        size: fc.constantFrom('quiet' as const, 'normal' as const, 'busy' as const),
        at: fc.double({ min: 0.05, max: 0.9, noNaN: true }),
      }),
      { seed, numRuns: count },
    )
    .map(({ kind, pair, size, at }) => ({ kind, before: pair[0], after: pair[1], sizes: SIZES[size], at }));
}

export function midrunSearch(count: number, seed: number, steady = false, only?: number): MidrunTally {
  const tally = emptyTally();
  midrunCases(count, seed).forEach((c, i) => {
    if (only === undefined || only === i) playMidrun(seed + i, steady ? { ...c, after: c.before } : c, tally);
  });
  return tally;
}

/**
 * Each change of `count` search cases (those during a run: a deploy, a rolling deploy) played at
 * each of the run's last `last` requests, where the run's final checks ask (day-plan.ts,
 * planRunProof: the days after its stretches, the canary, a cap's check): a deploy that lands
 * there meets checks asked side by side, after every day of the run has settled.
 * The search's own draws place a change at 5% to 90% of the run, never among those.
 */
export function endChecksSearch(count: number, seed: number, last: number): MidrunTally {
  const tally = emptyTally();
  midrunCases(count, seed).forEach((c, i) => {
    if (c.kind === 'between-runs') return;
    // The change lands `k` requests before the run's end.
    const length = steadyLength(seed + i, c);
    for (let k = 1; k <= Math.min(last, length - 1); k++)
      playMidrun(seed + i, { ...c, at: (length - k + 0.5) / length }, tally, SwitchingServer, length);
  });
  return tally;
}

/** Days of 20 to 200 items: a cap of 60 to 150 cuts some and not others. */
const AROUND_THE_CAP: DaySizes = { least: 20, most: 200 };

/**
 * A cap moved from `caps[0]` to `caps[1]`, both below the busiest days, by a deploy or a rolling
 * deploy, across every other reading in turn (each bound, order, zone, instants), `count` cases
 * (or of those, the indexes `only`).
 * The wide search's caps (100 and 1,000 on days of up to 400) never raise a cap some days still
 * exceed; this one does.
 */
export function capMoveSearch(
  count: number,
  seed: number,
  caps: [number, number],
  only?: readonly number[],
  Server: typeof SwitchingServer = SwitchingServer,
): MidrunTally {
  const tally = emptyTally();
  const bounds = ['inclusive', 'exclusive'] as const;
  const orders = ['oldest-first', 'newest-first', 'random'] as const;
  const instants = ['honoured', 'ignored', 'refused'] as const;
  const zones = [0, 330, -300];
  for (let i = 0; i < count; i++) {
    if (only !== undefined && !only.includes(i)) continue;
    const before: ServedReading = {
      startdate: bounds[i % 2] as ServedReading['startdate'],
      enddate: bounds[Math.floor(i / 2) % 2] as ServedReading['enddate'],
      order: orders[Math.floor(i / 4) % 3] as ServedReading['order'],
      cap: caps[0],
      maxLimit: null,
      dayOffsetMinutes: zones[Math.floor(i / 12) % 3] as number,
      instants: instants[Math.floor(i / 36) % 3] as ServedReading['instants'],
    };
    const kind = i % 2 === 0 ? 'mid-run' : 'flapping';
    const at = 0.05 + ((i * 0.137) % 0.85);
    const after = { ...before, cap: caps[1] };
    playMidrun(seed + i, { kind, before, after, sizes: AROUND_THE_CAP, at }, tally, Server);
  }
  return tally;
}

/** The zones a deploy moves a capped server's day between: to and from UTC, across it, an hour or two. */
const ZONE_MOVES: [number, number][] = [
  [0, 330],
  [0, -300],
  [330, 0],
  [-300, 0],
  [330, -300],
  [0, 120],
];

/**
 * A server's day moved by a deploy (mid-run), a rolling deploy (flapping) or a restart between
 * runs, on a source capped at 60, 100 or 150 whose days hold 20 to 200 items, across every bound,
 * order and instants reading in turn: 648 cases in all (or of those, the indexes `only`). Below a
 * cap of 60 few days are small enough for a canary, and where instants are not honoured no slice
 * can read a day's hours the moved zone gave up.
 */
export function zoneMoveSearch(
  count: number,
  seed: number,
  only?: readonly number[],
  Server: typeof SwitchingServer = SwitchingServer,
): MidrunTally {
  const tally = emptyTally();
  const bounds = ['inclusive', 'exclusive'] as const;
  const orders = ['oldest-first', 'newest-first', 'random'] as const;
  const instants = ['honoured', 'ignored', 'refused'] as const;
  const caps = [60, 100, 150];
  const kinds = ['mid-run', 'flapping', 'between-runs'] as const;
  for (let i = 0; i < count; i++) {
    if (only !== undefined && !only.includes(i)) continue;
    const [from, to] = ZONE_MOVES[Math.floor(i / 36) % ZONE_MOVES.length] as [number, number];
    const before: ServedReading = {
      startdate: bounds[i % 2] as ServedReading['startdate'],
      enddate: bounds[Math.floor(i / 2) % 2] as ServedReading['enddate'],
      order: orders[Math.floor(i / 4) % 3] as ServedReading['order'],
      cap: caps[Math.floor(i / 216) % 3] as number,
      maxLimit: null,
      dayOffsetMinutes: from,
      instants: instants[Math.floor(i / 12) % 3] as ServedReading['instants'],
    };
    const at = 0.05 + ((i * 0.137) % 0.85);
    const after = { ...before, dayOffsetMinutes: to };
    playMidrun(
      seed + i,
      { kind: kinds[i % 3] as ChangeKind, before, after, sizes: AROUND_THE_CAP, at },
      tally,
      Server,
    );
  }
  return tally;
}

/** Days of 20 to 140 items under a cap of 100: some neighbours above it, most below. */
const AROUND_THE_CAP_LOWER: DaySizes = { least: 20, most: 140 };

/** What a deploy whose old readers keep one day's requests moves (playSticky). */
export type StickyMove = 'start' | 'end' | 'cap' | 'zone';

/**
 * A deploy whose old readers keep one day's requests (SwitchingServer, `sticky`) moves `move`
 * either way: the start or end bound (turning inclusive or exclusive), the cap (60 to 100 or 100
 * to 60) or the server's day (UTC to 3 hours ahead, or 2 hours behind to UTC), on a UTC server
 * capped at 100 (unless the cap moves) that refuses instants, each other bound and order in turn,
 * at 20%, 50% and 80% of the run: case `i` of 720, its target a day holding 1 to 99 items (so its
 * own answer is not cut at 100) chosen by the seed. `wide`: case `i` of 648, instants refused,
 * ignored or honoured in turn, the target chosen by the seed and the case. `kept`: that many days
 * kept, 4 apart, of any size.
 */
export function playSticky(
  i: number,
  tally: MidrunTally,
  move: StickyMove = 'start',
  wide = false,
  stickyBy: 'start' | 'end' = 'start',
  /** Days the old readers keep: more than one, 4 days apart, chosen by the seed and the case. */
  kept = 1,
): void {
  const order = (['oldest-first', 'newest-first', 'random'] as const)[i % 3] as ServedReading['order'];
  const other = (['exclusive', 'inclusive'] as const)[Math.floor(i / 3) % 2] as ServedReading['enddate'];
  const either = Math.floor(i / 6) % 2 === 1;
  const at = ([0.2, 0.5, 0.8] as const)[Math.floor(i / 12) % 3] as number;
  const seed = 1 + Math.floor(i / (wide ? 108 : 36));
  const instants = wide ? (['refused', 'ignored', 'honoured'] as const)[Math.floor(i / 36) % 3] : 'refused';
  const steady: ServedReading = {
    startdate: other,
    enddate: other,
    order,
    cap: 100,
    maxLimit: null,
    dayOffsetMinutes: 0,
    instants: instants as ServedReading['instants'],
  };
  const [before, after] = stickyMove(steady, move, either);
  const from = addDays(TODAY, -60);
  const to = addDays(TODAY, 5);
  const days = daysFrom(addDays(TODAY, -20), addDays(TODAY, -1));
  const probe = new SwitchingServer(seed, from, to, before, before, Infinity, Infinity, AROUND_THE_CAP_LOWER);
  const targets = days.slice(1).filter((day) => {
    const count = probe.itemsOn(day).length;
    return count > 0 && count < 100;
  });
  const target = targets[(seed * 7 + (wide ? i : 0)) % targets.length] as DayString;
  const keep =
    kept === 1
      ? [target]
      : Array.from({ length: kept }, (_, k) => days[(seed * 7 + i + k * 4) % days.length] as DayString);
  readRun(probe, days, storedKnowledge(emptyReading()));
  const switchAt = Math.floor(probe.requests * at);
  const server = new SwitchingServer(
    seed,
    from,
    to,
    before,
    after,
    switchAt,
    switchAt,
    AROUND_THE_CAP_LOWER,
    keep,
    stickyBy,
  );
  const run = readRun(server, days, storedKnowledge(emptyReading()));
  const label = `sticky${stickyBy === 'end' ? ' by end' : ''} ${move}${wide ? ' wide' : ''} case ${i} (kept ${keep.join(' ')}) ${JSON.stringify(before)} -> ${JSON.stringify(after)} at ${at}`;
  tallyRun(server, run, Math.min(before.cap, after.cap), tally, label);
  tally.reopened += run.reopened;
  tally.requests += server.requests;
  tally.cases += 1;
}

/** The readings before and after a sticky deploy moves `move` one way (`either`) or the other. */
function stickyMove(
  steady: ServedReading,
  move: StickyMove,
  either: boolean,
): [ServedReading, ServedReading] {
  const bound = either ? (['exclusive', 'inclusive'] as const) : (['inclusive', 'exclusive'] as const);
  switch (move) {
    case 'start':
      return [
        { ...steady, startdate: bound[0] },
        { ...steady, startdate: bound[1] },
      ];
    case 'end':
      return [
        { ...steady, enddate: bound[0] },
        { ...steady, enddate: bound[1] },
      ];
    case 'cap':
      return [
        { ...steady, cap: either ? 60 : 100 },
        { ...steady, cap: either ? 100 : 60 },
      ];
    case 'zone':
      return [
        { ...steady, dayOffsetMinutes: either ? 0 : -120 },
        { ...steady, dayOffsetMinutes: either ? 180 : 0 },
      ];
  }
}

/** What a rolling deploy left, and what the night after made of it. */
export interface RollingFlags {
  /** Days the run left flagged and reopened, which the new reading alone reads whole. */
  left: number;
  /** Of those, the days the night after read whole; the others it flagged again. */
  readWhole: number;
  /** Days flagged after the run and the night that the new reading alone reads whole. */
  falseFlags: number;
  /** Days the run or the night settled complete but short: a defect. */
  short: string[];
  requests: { run: number; night: number };
}

/**
 * A rolling deploy (old and new readings answering at random from the run's 10th request for
 * `flapFor` requests, by default to the run's end, its last proofs included), then the night
 * after under the new reading alone, reading the days the run left reopened. The new reading
 * alone is played on the same data too, for the days it flags: a day the run flagged that it reads
 * whole is a flag the change made, which the night after should clear.
 */
export function playRollingFlags(seed: number, c: MidrunCase, flapFor = Infinity): RollingFlags {
  const steady = () =>
    new SwitchingServer(seed, MIDRUN_FROM, MIDRUN_TO, c.after, c.after, Infinity, Infinity, c.sizes);
  const alone = readRun(steady(), MIDRUN_DAYS, storedKnowledge(emptyReading()));
  const flaggedAlone = new Set([...alone.results].filter(([, r]) => r.truncated).map(([day]) => day));
  const server = new SwitchingServer(
    seed,
    MIDRUN_FROM,
    MIDRUN_TO,
    c.before,
    c.after,
    10,
    10 + flapFor,
    c.sizes,
  );
  const knowledge = storedKnowledge(emptyReading());
  const run = readRun(server, MIDRUN_DAYS, knowledge);
  const night = steady();
  const next = readRun(night, run.left, storedKnowledge(knowledge.reading));
  const last = (day: DayString) => next.results.get(day) ?? run.results.get(day);
  const left = run.left.filter((day) => run.results.get(day)?.truncated === true && !flaggedAlone.has(day));
  const short = MIDRUN_DAYS.filter((day) => {
    const result = last(day);
    if (result === undefined || result.truncated || next.left.includes(day)) return false;
    return night.itemsOn(day).some((id) => !result.ids.has(id));
  });
  return {
    left: left.length,
    readWhole: left.filter((day) => next.results.get(day)?.truncated === false).length,
    falseFlags: MIDRUN_DAYS.filter((day) => last(day)?.truncated === true && !flaggedAlone.has(day)).length,
    short: short.map((day) => `seed ${seed} ${day}`),
    requests: { run: server.requests, night: night.requests },
  };
}

/** playRollingFlags over `count` cases of midrunCases(count, seed), summed. */
export function rollingFlagsSearch(count: number, seed: number, flapFor = Infinity): RollingFlags {
  const sum: RollingFlags = {
    left: 0,
    readWhole: 0,
    falseFlags: 0,
    short: [],
    requests: { run: 0, night: 0 },
  };
  midrunCases(count, seed).forEach((c, i) => {
    const played = playRollingFlags(i + 1, c, flapFor);
    sum.left += played.left;
    sum.readWhole += played.readWhole;
    sum.falseFlags += played.falseFlags;
    sum.short.push(...played.short);
    sum.requests.run += played.requests.run;
    sum.requests.night += played.requests.night;
  });
  return sum;
}
