import { addDays, DAY_MS, type DayString, dayDiff, dayOfTime, dayStartMs, HOUR_MS } from '../time/days.js';
import { keptOnItem } from './item-identity.js';

/**
 * What a run knows about how one source's server reads a windowed resource where the spec is
 * silent (sections 4 and 8). Everything here is learned from positive evidence only, the items
 * a server did return, so no reading is ever assumed from an absence, which a cap, an order or
 * an empty day can fake.
 *
 * Say a request asked startdate=a and enddate=b. Whatever the server's reading, it serves the
 * items of an interval [a + S, b + E), where S = s + o and E = e + o: s is 0 (startdate
 * inclusive) or 24 h (exclusive), e is 24 h (enddate inclusive) or 0 (exclusive), and o is the
 * offset of the server's day against UTC's, which a real time zone keeps within -14 h (UTC+14)
 * and +12 h (UTC-12), in whole quarter hours. Each returned item's dt is in the interval, so:
 * - `headMs`, the smallest (dt - a) seen, bounds S from above (S is a quarter-hour multiple, so
 *   S <= headMs rounded down to one);
 * - `tailMs`, the largest (dt - b) seen, bounds E from below (E > tailMs).
 * The request for a UTC day D is the narrowest (a, b) with a + S <= D and b + E >= D + 24 h for
 * every S and E the evidence allows. No reading needs to be named to be served: an inclusive
 * bound, an exclusive one and any time zone are all the same two numbers.
 */
export interface ServerReading {
  headMs: number | null;
  tailMs: number | null;
  order: ItemOrder | null;
  /** Most items seen in one response: the server can serve at least this many. */
  largestResponse: number;
  /** A cap on items per response, proved: a wider request came back no larger, with new items. */
  cap: number | null;
  /** Smallest `limit` answered with HTTP 400. */
  limitRefused: number | null;
  /**
   * What the server did with an ISO instant in startdate and enddate (time-slices.ts), the last
   * time a day above its cap let the tool ask; null until then.
   */
  instants: InstantsReading | null;
}

/**
 * A bound that moves inward by hours after many items held to it is a server that changed how it
 * reads (a deploy), not a run learning it better. A rolling deploy answers the old way too for a
 * while, so until the run ends every request holds its day under the earlier readings as well.
 */
interface ReadingMoves {
  /** What held to each bound since it last moved by hours: the start (heads), the end (tails). */
  start: BoundItems;
  end: BoundItems;
  /** How far requests of the earlier readings reach, on the sides that moved. */
  earlier?: Reach;
  /** How far requests reach past the other end of a side a zone moved (noteShift). */
  shifted?: Reach;
  /** The reach past the evidence that the reading was stored with (handedOn, startFrom). */
  loaded?: Reach;
  /** The run's own answers' earliest head and latest tail (handedOn lets a loaded reach go by them). */
  served?: { head: number; tail: number };
  /** The run started from a reading earlier runs learned (earlierRunsReading). */
  stored: boolean;
  /**
   * The sides earlier runs' answers gave evidence of: a side the run learns from nothing proves a
   * bound inclusive (a whole day's move) as often as a server changes it.
   */
  storedSides: { start: boolean; end: boolean };
  /** A zone's shift of each side that a cut answer showed, until an answer not cut holds to it (noteShift). */
  pendingShift?: { start: number; end: number };
}

/**
 * Items seen inside one bound since it last moved by hours, per quarter hour from their request's
 * startdate midnight (heads) or enddate midnight (tails), from answers not cut: how many held to a
 * band as wide as a move is what says the server moved (heldNear).
 */
interface BoundItems {
  counts: Map<number, number>;
  /** Held to by earlier runs' answers (a stored reading), until it moves. */
  heldBefore: boolean;
}

/** The latest a server's interval starts after a request's startdate midnight, the earliest it ends after its enddate's. */
export interface Reach {
  startMs: number;
  endMs: number;
}

/** A reach stored past a reading's evidence (handedOn), on the sides it passes it. */
export type StoredReach = Partial<Reach>;

/** A stored reach on both sides: none past the evidence where it has no value. */
function fullReach(reach: StoredReach): Reach {
  return {
    startMs: reach.startMs ?? Number.NEGATIVE_INFINITY,
    endMs: reach.endMs ?? Number.POSITIVE_INFINITY,
  };
}

/** A stored reach from its two columns, null on a side it does not pass. */
export function storedReach(startMs: number | null, endMs: number | null): StoredReach {
  return { ...(startMs === null ? {} : { startMs }), ...(endMs === null ? {} : { endMs }) };
}

/**
 * 'honoured': it filtered by the instant (at its own inclusivity); 'ignored': it dropped the time
 * (items outside the instant came back, or ones inside did not); 'refused': it answered 400.
 */
export type InstantsReading = 'honoured' | 'ignored' | 'refused';

export type ItemOrder = 'oldest-first' | 'newest-first' | 'unordered';

/** utc, early (starts before UTC midnight) or late, under the bounds as taken; unknown until proved. */
export type ServerDay = 'utc' | 'early' | 'late' | 'unknown';

export function emptyReading(): ServerReading {
  return {
    headMs: null,
    tailMs: null,
    order: null,
    largestResponse: 0,
    cap: null,
    limitRefused: null,
    instants: null,
  };
}

const QUARTER_HOUR_MS = HOUR_MS / 4;
/** Before any evidence: an exclusive startdate on a server 12 h behind UTC. */
const LATEST_START_MS = DAY_MS + 12 * HOUR_MS;
/** Before any evidence: an exclusive enddate on a server 14 h ahead of UTC. */
const EARLIEST_END_MS = -14 * HOUR_MS;
/** An exclusive startdate serves nothing earlier than a + 24 h - 14 h (the earliest time zone). */
const START_PROOF_MS = 10 * HOUR_MS;
/** An exclusive enddate serves nothing later than b + 12 h (the latest time zone). */
const END_PROOF_MS = 12 * HOUR_MS;
/**
 * Items further than this outside [a, b + 1 day) cannot come from any reading: they say nothing
 * about the bounds (a server's stray item must not widen every request), though they are stored.
 */
const PLAUSIBLE_MS = 2 * DAY_MS;

function floorQuarter(ms: number): number {
  return Math.floor(ms / QUARTER_HOUR_MS) * QUARTER_HOUR_MS;
}

/** Inward by this much, a bound moved because the server changed, not because the run learned it better. */
const MOVED_MS = HOUR_MS;

/** The evidence's reach on the sides it has any for. */
interface KnownReach {
  startMs: number | null;
  endMs: number | null;
}

/** What the evidence alone says: the latest start and earliest end of the server's interval. */
function evidenceReach(reading: ServerReading): Reach {
  return {
    startMs:
      reading.headMs === null ? LATEST_START_MS : Math.min(LATEST_START_MS, floorQuarter(reading.headMs)),
    endMs:
      reading.tailMs === null
        ? EARLIEST_END_MS
        : Math.max(EARLIEST_END_MS, floorQuarter(reading.tailMs) + QUARTER_HOUR_MS),
  };
}

/** The latest the server's interval can start after a request's startdate midnight (S at most). */
function startReach(reading: ServerReading): number {
  return evidenceReach(reading).startMs;
}

/** The earliest the server's interval can end after a request's enddate midnight (E at least). */
function endReach(reading: ServerReading): number {
  return evidenceReach(reading).endMs;
}

/**
 * How far the run's requests reach: the evidence's reach, and the earlier readings' of a server
 * that changed during the run. Only the requests go by the earlier readings: what an answer must
 * hold (heldWhole) is what the evidence says, so an answer of the old reading still proves it stale.
 */
function requestReach(reading: ServerReading): Reach {
  const moves = movesOf.get(reading);
  return widest(evidenceReach(reading), moves?.earlier, moves?.shifted, moves?.loaded);
}

/** The reach that holds every reach given: the latest start, the earliest end. */
function widest(reach: Reach, ...more: (Reach | undefined)[]): Reach {
  let { startMs, endMs } = reach;
  for (const other of more) {
    if (other === undefined) continue;
    startMs = Math.max(startMs, other.startMs);
    endMs = Math.min(endMs, other.endMs);
  }
  return { startMs, endMs };
}

/**
 * Kept beside each reading object, not in it: run-local, and gone with the object (a reading
 * loaded afresh, a copy) as a run's knowledge is; only the reach the run's requests took from a
 * move goes with the reading to its next reader (handedOn).
 */
const movesOf = new WeakMap<ServerReading, ReadingMoves>();

/**
 * What a run's answers showed beyond the reading, run-local beside it as its moves are, and kept
 * when the reading is forgotten as stale: the caps the run knows proved (this run's, and the one
 * earlier runs stored) and the largest answer (a rolling deploy that raises the cap still answers
 * the old way for a while: an answer of exactly an old cap's size may have been cut by it,
 * although the reading's cap, or none, says not), and how its long answers listed their items.
 */
interface RunAnswers {
  proved: Set<number>;
  largest: number;
  /** The distinct answers (by their first and last items' times) that held `largest` items. */
  atLargest?: Set<string>;
  /** The spans in days of the requests (by days) of those answers. */
  largestSpans?: Set<number>;
  /** How the run's last long answer listed its items, and whether one listed them otherwise before. */
  listing?: Listing;
  listingChanged: boolean;
  /** The bounds' evidence came to hold two readings at once (mixedReadings). */
  mixed?: boolean;
}

/**
 * How a long answer lists its items: by dt, oldest first ('rising') or newest first ('falling'),
 * or at random ('shuffled': about as many steps down as up). A server does not move between them
 * unless it changed: a shuffled answer of 20 items comes out sorted once in 10^17, and a sorted
 * listing turns round only with the code that sorts. Answers between them (a listing by id, with
 * a few late arrivals) and short ones say none.
 */
type Listing = 'rising' | 'falling' | 'shuffled';
const LISTING_EVIDENCE = 20;

function listingOf(times: readonly number[]): Listing | undefined {
  let rising = 0;
  let falling = 0;
  for (let i = 1; i < times.length; i++) {
    const [previous, current] = [times[i - 1] as number, times[i] as number];
    if (current > previous) rising += 1;
    else if (current < previous) falling += 1;
  }
  const steps = rising + falling;
  if (steps < LISTING_EVIDENCE - 1) return undefined;
  if (falling === 0) return 'rising';
  if (rising === 0) return 'falling';
  return rising > steps / 5 && falling > steps / 5 ? 'shuffled' : undefined;
}

/**
 * Whether an answer since the last call listed its items otherwise than one before it (sorted,
 * then shuffled, or the reverse): the server changed how it reads, whatever the bounds say.
 */
export function listingChanged(reading: ServerReading): boolean {
  const caps = answersOf.get(reading);
  if (caps?.listingChanged !== true) return false;
  caps.listingChanged = false;
  return true;
}

/**
 * Whether the bounds' evidence held two readings at once since the last call. A server serves a
 * request (a, b) over [a + S, b + E), where E - S is a whole number of days no more than one
 * (both bounds inclusive: one; one exclusive: none; both: minus one) whatever its zone, so its
 * items hold tail - head below a day. A tail a day or more past the head came from two servers: a
 * deploy that moved the day by hours (the new zone's late tail beside the old zone's early head,
 * which no item can take back), answering while the reading was learned. The run learns it anew.
 */
export function mixedReadings(reading: ServerReading): boolean {
  const caps = answersOf.get(reading);
  if (caps?.mixed !== true) return false;
  caps.mixed = false;
  return true;
}

/** The listing a stored order was learned from; none for one in no order (a shuffle, or two orders merged). */
const LISTING_OF_ORDER: Record<ItemOrder, Listing | undefined> = {
  'oldest-first': 'rising',
  'newest-first': 'falling',
  unordered: undefined,
};

const answersOf = new WeakMap<ServerReading, RunAnswers>();

function runAnswers(reading: ServerReading): RunAnswers {
  const caps = answersOf.get(reading) ?? { proved: new Set<number>(), largest: 0, listingChanged: false };
  answersOf.set(reading, caps);
  return caps;
}

/**
 * One source's resources know each other's caps, this run's and stored: a cap is the server's,
 * and a deploy that lowers it lowers it for every endpoint. A resource whose answers never reached
 * the old cap cannot see the new one by itself (an answer of 60 where the largest was 97 looks
 * whole); once another proved 60, its answers of exactly 60 are checked, and its days settled at
 * 60 are read again (reopenUncapped, as each day settles and at the run's end; a queued run's
 * workers hear each other's caps, src/sync/reading-store.ts hearCaps). A server that caps its
 * endpoints apart costs such a check on an answer of exactly another's cap, and a day at that size
 * read again once, never a day lost.
 */
export function shareCaps(readings: readonly ServerReading[]): void {
  const proved = new Set<number>();
  for (const reading of readings) for (const cap of runAnswers(reading).proved) proved.add(cap);
  for (const reading of readings) runAnswers(reading).proved = proved;
}

/** A size an answer may have been cut at (`atCap`), not proved the reading's cap. */
export function suspectCap(reading: ServerReading, size: number): void {
  runAnswers(reading).proved.add(size);
}

/** The sizes the run knows answers may be cut at (caps proved, stored or suspected), least first. */
export function knownCaps(reading: ServerReading): number[] {
  return [...(answersOf.get(reading)?.proved ?? [])].sort((a, b) => a - b);
}

/** Records a cap proved: the reading's cap, and one of the run's for `atCap`. */
export function proveCap(reading: ServerReading, cap: number): void {
  reading.cap = cap;
  runAnswers(reading).proved.add(cap);
}

/**
 * The reach past the reading's evidence that a later reader starts from (stored for another worker
 * of the run and for the next run: reading-store.ts, asStored): how far its requests reached after
 * a move the run saw (a zone's shift reaching past the other end, or an earlier reading's reach
 * kept), which is not in the evidence. Without it, a reader whose answers show no move of their
 * own (the move showed on the end, and the hours the zone gave up at the start hold no item any
 * answer can show) asks each day's request hours short of the day. Kept apart from the evidence:
 * taken for an item's bound, a sparse bound learned better past it read as the server moving, and a
 * steady server's stored reading wandered hours a run. Undefined on a side it does not pass.
 */
export function handedOn(reading: ServerReading): StoredReach {
  const moves = movesOf.get(reading);
  if (moves === undefined) return {};
  // A later run that saw no move of its own asked one server, whose items show how far it serves:
  // a reach loaded past them goes (a zone's move that came back, a sparse bound learned better).
  // Not within the run that took it: another of its workers may have had only the old reading's
  // answers of a rolling deploy.
  const { loaded, served } = moves;
  const ownMoves = moves.earlier !== undefined || moves.shifted !== undefined;
  const still =
    loaded !== undefined && served !== undefined && moves.stored && !ownMoves
      ? {
          startMs: Math.min(loaded.startMs, floorQuarter(served.head)),
          endMs: Math.max(loaded.endMs, floorQuarter(served.tail) + QUARTER_HOUR_MS),
        }
      : loaded;
  // Of a reading earlier runs learned: one learned from nothing this run moves as it learns (a
  // sparse first day's bound), and its reach then would widen every later run's requests.
  return moves.stored
    ? reachPast(reading, moves.earlier, moves.shifted, pendingReach(reading, moves), still)
    : reachPast(reading, still);
}

/**
 * How far the requests would reach past the other end of a side a zone moved in cut answers only
 * (noteShift's pending shift), which no answer not cut confirmed: not asked by the run that saw it
 * (its answers were cut, its days flagged), but handed on. A later run whose answers of the new zone
 * are whole starts past the old evidence's end on that side: it shows no move of its own, and a
 * day's request would end, or start, hours short of the day.
 */
function pendingReach(reading: ServerReading, moves: ReadingMoves): Reach | undefined {
  const pending = moves.pendingShift;
  if (pending === undefined || (pending.start <= 0 && pending.end <= 0)) return undefined;
  return shiftedReach(moves, evidenceReach(reading), pending);
}

/** The sides of the reaches that pass the reading's evidence: what a reader's requests take from them. */
export function reachPast(reading: ServerReading, ...reaches: (StoredReach | undefined)[]): StoredReach {
  const evidence = evidenceReach(reading);
  const handed = widest(evidence, ...reaches.map((reach) => reach && fullReach(reach)));
  return {
    ...(handed.startMs > evidence.startMs ? { startMs: handed.startMs } : {}),
    ...(handed.endMs < evidence.endMs ? { endMs: handed.endMs } : {}),
  };
}

/**
 * The reading a run starts from, as earlier runs stored it, with the reach its requests took past
 * the evidence (handedOn) and the items its bounds rest on (boundItemTimes): the cap and the
 * largest answer are learned again (a server may have changed them since), but the stored cap is
 * one the run knows.
 */
export function startFrom(
  stored: ServerReading,
  reach: StoredReach = {},
  items: BoundItemTimes = { startMs: null, endMs: null },
): ServerReading {
  const reading = { ...stored, largestResponse: 0, cap: null };
  restOnStored(reading, items);
  if (reach.startMs !== undefined || reach.endMs !== undefined)
    movesOf.set(reading, {
      ...startedMoves({ start: stored.headMs !== null, end: stored.tailMs !== null }),
      loaded: fullReach(reach),
    });
  if (stored.cap !== null) runAnswers(reading).proved.add(stored.cap);
  // Every answer earlier runs read came in that order: a long one listed the other way round is a
  // server that changed since (listingChanged), whatever its bounds still agree with.
  const listing = LISTING_OF_ORDER[stored.order ?? 'unordered'];
  if (listing !== undefined) runAnswers(reading).listing = listing;
  return reading;
}

/** Whether `count` items may have been cut by a cap: at or above the reading's, or at one the run knows. */
export function atCap(reading: ServerReading, count: number): boolean {
  return (
    (reading.cap !== null && count >= reading.cap) || (answersOf.get(reading)?.proved.has(count) ?? false)
  );
}

/**
 * Whether `count` items are exactly a cap the run knows that a larger answer has since exceeded:
 * the server raised it, and an answer that size came from its old reading, cut.
 */
export function atRaisedCap(reading: ServerReading, count: number): boolean {
  const caps = answersOf.get(reading);
  if (caps === undefined) return false;
  return caps.proved.has(count) && caps.largest > count;
}

/**
 * Whether `count` items may be cut at a raised cap not yet proved: an answer exceeded a cap the
 * run knew (the server raised it), and none since was larger than `count`. A steady server never
 * serves above a cap it proved, so only a server that changed pays for this.
 */
export function atNewCap(reading: ServerReading, count: number): boolean {
  const caps = answersOf.get(reading);
  if (caps === undefined || count <= 0 || count < caps.largest) return false;
  for (const cap of caps.proved) if (cap < count) return true;
  return false;
}

/**
 * Items inside a bound, within as many hours of it as it then moves by, that say the server
 * changed rather than the run learned: a bound a few items placed moves as the run learns, one
 * that ten items held to over the hours it gave up does not.
 */
const HELD_TO = 10;

/**
 * The widest band inside a bound its items are counted in: answers far inside a bound learned
 * from few items say nothing of it (a first sparse day's, a cut one's), and a zone's move gives up
 * hours nearest the bound first.
 */
const HELD_BAND_MOST = 2 * HOUR_MS;

/** The moves of a reading a run starts from, before its first answer: `known`, the sides it has evidence of. */
function startedMoves(known: { start: boolean; end: boolean }): ReadingMoves {
  return {
    start: freshBound(known.start),
    end: freshBound(known.end),
    stored: known.start || known.end,
    storedSides: known,
  };
}

/** A bound's items, none counted yet: `heldBefore` where earlier runs' answers held to it. */
function freshBound(heldBefore: boolean): BoundItems {
  return { counts: new Map(), heldBefore };
}

/**
 * A reading another worker of the same queued run stored: its bounds are that run's evidence so
 * far, not bounds earlier runs' answers held to. Its items are counted from none, as a run counts
 * its own learning's: taken as held, a thin day's evidence (a first item at 03:47, a last one
 * past an enddate at 04:43) reads as two readings at once (twoReadings), and the run learns a
 * steady server again and reads its days twice.
 */
export function learnedThisRun(reading: ServerReading): void {
  const loaded = movesOf.get(reading)?.loaded;
  movesOf.set(reading, {
    start: freshBound(false),
    end: freshBound(false),
    stored: false,
    storedSides: { start: false, end: false },
    ...(loaded === undefined ? {} : { loaded }),
  });
}

/** Whether `reading` came from earlier runs' answers, not from another worker of this run (learnedThisRun). */
export function earlierRunsReading(reading: ServerReading): boolean {
  return movesOf.get(reading)?.stored !== false;
}

/** Counts each time into its quarter hour. */
function tally(counts: Map<number, number>, times: readonly number[]): void {
  for (const time of times) {
    const quarter = Math.floor(time / QUARTER_HOUR_MS);
    counts.set(quarter, (counts.get(quarter) ?? 0) + 1);
  }
}

/** Items counted in [from, to): quarter hours whose start lies in it. */
function countIn(counts: Map<number, number>, from: number, to: number): number {
  let count = 0;
  for (const [quarter, n] of counts) {
    const at = quarter * QUARTER_HOUR_MS;
    if (at >= from && at < to) count += n;
  }
  return count;
}

/**
 * Whether a bound was held to within [from, to), the band inside it: by earlier runs, or by
 * HELD_TO of this run's own items (`byItems`).
 */
function heldNear(bound: BoundItems, from: number, to: number): { held: boolean; byItems: boolean } {
  const byItems = countIn(bound.counts, from, to) >= HELD_TO;
  return { held: bound.heldBefore || byItems, byItems };
}

/**
 * Whether a bound moved inward by hours: a server's zone changed, or a bound turned inclusive. A
 * run learning from nothing proves a bound inclusive (a whole day) as often as a server changes
 * it, so there a whole day counts only on a side earlier runs learned (`stored`).
 */
function movedBy(inward: number, stored: boolean): boolean {
  return inward >= MOVED_MS && (stored || inward % DAY_MS !== 0);
}

/**
 * Notes how a response moved the evidence's reach from `before` (null on a side the evidence had
 * nothing for: the run's start, or the reading forgotten as stale, whose count starts afresh): a
 * side that moved inward by hours after HELD_TO items held to the hours it gave up keeps its
 * earlier reach for the run's requests (and, for a zone's move, a reach past the other end: noteShift).
 */
function noteMoves(reading: ServerReading, before: KnownReach, answer: MovingAnswer): void {
  // A reading the run starts from, learned by earlier runs, was held to by their answers.
  const moves =
    movesOf.get(reading) ?? startedMoves({ start: before.startMs !== null, end: before.endMs !== null });
  movesOf.set(reading, moves);
  const now = evidenceReach(reading);
  const inward = { start: (before.startMs ?? 0) - now.startMs, end: now.endMs - (before.endMs ?? 0) };
  const startMoved = before.startMs !== null && movedBy(inward.start, moves.storedSides.start);
  const endMoved = before.endMs !== null && movedBy(inward.end, moves.storedSides.end);
  const earlier = { startMs: Number.NEGATIVE_INFINITY, endMs: Number.POSITIVE_INFINITY, ...moves.earlier };
  // Moved after many items held to the hours it gave up: the server changed, not the run's learning.
  const band = { start: Math.min(inward.start, HELD_BAND_MOST), end: Math.min(inward.end, HELD_BAND_MOST) };
  const startBand: [number, number] = [before.startMs ?? 0, (before.startMs ?? 0) + band.start];
  const endBand: [number, number] = [(before.endMs ?? 0) - band.end, before.endMs ?? 0];
  const startHeld = heldNear(moves.start, ...startBand);
  const endHeld = heldNear(moves.end, ...endBand);
  const startChanged = startMoved && startHeld.held;
  const endChanged = endMoved && endHeld.held;
  if (startChanged) earlier.startMs = Math.max(earlier.startMs, before.startMs ?? 0);
  if (endChanged) earlier.endMs = Math.min(earlier.endMs, before.endMs ?? 0);
  const shift = noteShift(
    moves,
    reading,
    answer,
    { start: startChanged ? inward.start : 0, end: endChanged ? inward.end : 0 },
    { start: startChanged && startHeld.byItems, end: endChanged && endHeld.byItems },
  );
  if (Number.isFinite(earlier.startMs) || Number.isFinite(earlier.endMs)) moves.earlier = earlier;
  applyShift(moves, now, shift);
  // Only a loaded reach is let go by what the run's answers served (handedOn).
  if (moves.loaded !== undefined) noteServed(moves, answer);
  if (startMoved || before.startMs === null) moves.start = freshBound(false);
  if (endMoved || before.endMs === null) moves.end = freshBound(false);
  // Only items a band may hold: the bounds only move inward, so those farther never will be. A
  // cut answer holds to the bound on the side its order keeps (newest first: the end), as one
  // not cut does: a busy source's answers are all cut, and its end, held to by their newest
  // items, moving by a zone's hours is a deploy, not the run learning.
  const { headMs, tailMs } = reading;
  if (headMs !== null && (!answer.mayBeCut || answer.kept === 'start' || answer.kept === 'both'))
    tally(
      moves.start.counts,
      answer.heads.filter((head) => head < headMs + HELD_BAND_MOST),
    );
  if (tailMs !== null && (!answer.mayBeCut || answer.kept === 'end' || answer.kept === 'both'))
    tally(
      moves.end.counts,
      answer.tails.filter((tail) => tail > tailMs - HELD_BAND_MOST),
    );
}

/**
 * Takes the requests as much further past the other end as a zone moved one (noteShift), from
 * the evidence's reach `now`.
 */
function applyShift(moves: ReadingMoves, now: Reach, shift: { start: number; end: number }): void {
  if (shift.start > 0 || shift.end > 0) moves.shifted = shiftedReach(moves, now, shift);
}

/** How far the requests reach past the other end of each side a zone moved by `shift`. */
function shiftedReach(moves: ReadingMoves, now: Reach, shift: { start: number; end: number }): Reach {
  const shifted = { startMs: Number.NEGATIVE_INFINITY, endMs: Number.POSITIVE_INFINITY, ...moves.shifted };
  // From as far as the requests reached past the evidence already: a zone that moves again moves
  // from where the last move left it (a sparse bound learned better in steps adds only each step).
  const from = widest(now, moves.shifted, moves.loaded);
  if (shift.start > 0) shifted.endMs = Math.max(EARLIEST_END_MS, from.endMs - shift.start);
  if (shift.end > 0) shifted.startMs = Math.min(LATEST_START_MS, from.startMs + shift.end);
  return shifted;
}

/**
 * An answer to `range` read as possibly cut (as large as any before it), which a check then
 * proved whole: no cap cut it. A zone's move it showed waited for an answer not cut (noteShift),
 * and a cap below nearly every day may never give another; it is taken now, as this answer's.
 */
export function provedWhole(reading: ServerReading, range: DayRange, items: readonly unknown[]): void {
  const moves = movesOf.get(reading);
  if (moves?.pendingShift === undefined) return;
  const { heads, tails } = boundOffsets(range, items.map(itemTime));
  const shift = noteShift(
    moves,
    reading,
    { heads, tails, mayBeCut: false, whole: true },
    { start: 0, end: 0 },
    { start: false, end: false },
  );
  applyShift(moves, evidenceReach(reading), shift);
}

/** Folds an answer's earliest head and latest tail into the run's (ReadingMoves.served). */
function noteServed(moves: ReadingMoves, answer: MovingAnswer): void {
  let { head, tail } = moves.served ?? { head: Number.POSITIVE_INFINITY, tail: Number.NEGATIVE_INFINITY };
  for (const h of answer.heads) if (h < head) head = h;
  for (const t of answer.tails) if (t > tail) tail = t;
  if (Number.isFinite(head) && Number.isFinite(tail)) moves.served = { head, tail };
}

/**
 * The side a cut answer still holds whole: listed by dt in the order every answer of the run came
 * in, a cut drops the other end's items only (oldest first: the newest go, the start is kept).
 * In no order, a cut keeps a sample of the whole day: its items near either end hold that end as
 * an answer not cut does ('both'; a source capped below its days answers nothing else).
 */
function keptSide(reading: ServerReading, order: ItemOrder | null): KeptSide | undefined {
  return order === null || order !== reading.order ? undefined : KEPT_BY_ORDER[order];
}

type KeptSide = 'start' | 'end' | 'both';
const KEPT_BY_ORDER: Record<ItemOrder, KeptSide> = {
  'oldest-first': 'start',
  'newest-first': 'end',
  unordered: 'both',
};

/** An answer as noteMoves sees it: its items against its startdate and enddate midnights. */
interface MovingAnswer {
  heads: number[];
  tails: number[];
  /** As large as any answer before it: its items hold to no bound but the side it keeps. */
  mayBeCut: boolean;
  /** The side a cut answer keeps whole, or both for one in no order (keptSide). */
  kept?: KeptSide;
  /** Not cut: below the request's limit and any cap the run knows. */
  whole: boolean;
}

/**
 * A zone that moves shifts both ends of the server's day, but only the end it moved outward
 * shows in items: none can show that the other end came earlier. So where a bound held to (by
 * earlier runs, for a stored reading; else by HELD_TO of this run's items within the hours it
 * moved) moves by a zone's hours (less than half a day: a bound that turned moves a whole day,
 * which sparse items can show as a little less), the requests reach as much further past the
 * other end (never past what the widest request holds): at once where an
 * answer not cut moved it; where a cut one did (a cut shows a bound only as far as it reaches),
 * once an answer not cut holds items within an hour of the moved bound, unless this run's own
 * items held the bound (`heldByItems`): an item past a bound they proved tight shows a move of at
 * least as far, whatever the answer's cut (a stored bound, taken as held, may be one a busy
 * source's cut answers never showed tight); or unless the cut answer's kept side (its order's:
 * newest first, the end) stops an hour or more short of the other bound as the reading places
 * it, which is what that bound's move by a zone's hours shows there (a busy source's cut answers
 * hold their end to the minute). Returns the shift of each side to apply now, by how far that
 * side moved (`moved`, 0 for none).
 */
function noteShift(
  moves: ReadingMoves,
  reading: ServerReading,
  answer: MovingAnswer,
  moved: { start: number; end: number },
  heldByItems: { start: boolean; end: boolean },
): { start: number; end: number } {
  // `moved` is non-zero only for a bound held to (noteMoves), in a run's own learning too: a
  // queued worker that saw a new zone's start, but not its end, settled days on answers that
  // ended hours short of them.
  const zone = (by: number) => (by > 0 && by < DAY_MS / 2 ? by : 0);
  const pending = moves.pendingShift ?? { start: 0, end: 0 };
  pending.start = Math.max(pending.start, zone(moved.start));
  pending.end = Math.max(pending.end, zone(moved.end));
  moves.pendingShift = pending;
  const { headMs, tailMs } = reading;
  // A cut answer shows the bound its order keeps: where its items stop an hour or more short of
  // that bound as the reading places it, the other bound's move may be a zone's, and waiting for
  // an answer not cut (which a cap below every day never gives) would settle days on answers that
  // end, or start, hours short of them. Near it, the kept bound held: no zone moved it.
  const keptShownMoved = (side: KeptSide) =>
    answer.kept === side &&
    (side === 'end'
      ? tailMs !== null && !answer.tails.some((tail) => tail > tailMs - HOUR_MS)
      : headMs !== null && !answer.heads.some((head) => head < headMs + HOUR_MS));
  const startHeld = answer.whole || heldByItems.start || keptShownMoved('end');
  const endHeld = answer.whole || heldByItems.end || keptShownMoved('start');
  const shift = {
    start:
      startHeld && headMs !== null && answer.heads.some((head) => head < headMs + HOUR_MS)
        ? pending.start
        : 0,
    end: endHeld && tailMs !== null && answer.tails.some((tail) => tail > tailMs - HOUR_MS) ? pending.end : 0,
  };
  if (shift.start > 0) pending.start = 0;
  if (shift.end > 0) pending.end = 0;
  return shift;
}

/**
 * The instants an answer to `range` must hold if the reading holds: the server serves
 * [a + S, b + E), and the evidence says S <= startReach and E >= endReach.
 */
function servedSpan(range: DayRange, reading: ServerReading): { from: number; to: number } {
  return {
    from: dayStartMs(range.startdate) + startReach(reading),
    to: dayStartMs(range.enddate) + endReach(reading),
  };
}

/**
 * Whether an answer not cut holds every item of `day`, whatever reading served it: it holds items
 * of the day within a quarter hour after its first midnight and before its last, and a server's
 * interval starts and ends on quarter hours (zones and whole days are multiples of one), so it
 * started no later than the day and ended no earlier.
 */
export function spansDay(times: readonly number[], day: DayString): boolean {
  const start = dayStartMs(day);
  const end = start + DAY_MS;
  return (
    times.some((time) => time >= start && time < start + QUARTER_HOUR_MS) &&
    times.some((time) => time >= end - QUARTER_HOUR_MS && time < end)
  );
}

/** Whether an item at `time` is one the answer to `range` must hold if the reading holds. */
export function heldWhole(range: DayRange, reading: ServerReading, time: number): boolean {
  const { from, to } = servedSpan(range, reading);
  return time >= from && time < to;
}

/** Whether `range`, as the reading serves it, holds any hour of `day`. */
export function servesPartOf(range: DayRange, reading: ServerReading, day: DayString): boolean {
  const { from, to } = servedSpan(range, reading);
  return from < dayStartMs(day) + DAY_MS && to > dayStartMs(day);
}

/** startdate is proved inclusive: an item came earlier than an exclusive one could serve. */
export function startInclusive(reading: ServerReading): boolean {
  return reading.headMs !== null && reading.headMs < START_PROOF_MS;
}

/** enddate is proved inclusive: an item came later than an exclusive one could serve. */
export function endInclusive(reading: ServerReading): boolean {
  return reading.tailMs !== null && reading.tailMs >= END_PROOF_MS;
}

/** The server's day against UTC's, with an unproved bound taken as exclusive. */
export function serverDay(reading: ServerReading): ServerDay {
  const latestOffset = startReach(reading) - (startInclusive(reading) ? 0 : DAY_MS);
  const earliestOffset = endReach(reading) - (endInclusive(reading) ? DAY_MS : 0);
  if (latestOffset < 0) return 'early';
  if (earliestOffset > 0) return 'late';
  return latestOffset === 0 && earliestOffset === 0 ? 'utc' : 'unknown';
}

export interface DayRange {
  startdate: DayString;
  enddate: DayString;
}

/**
 * The narrowest request that holds every item of UTC day `day` under every reading the evidence
 * allows. Once the evidence is tight this is exactly one server day: (D, D) on an inclusive UTC
 * server, (D-1, D+1) on an exclusive one, (D-1, D) on an inclusive server a few hours behind UTC.
 */
export function requestFor(day: DayString, reading: ServerReading): DayRange {
  const { before, after } = requestDays(reading);
  return { startdate: addDays(day, -before), enddate: addDays(day, after) };
}

/** How many days before and after a day its request (requestFor) reaches: the same for every day. */
function requestDays(reading: ServerReading): { before: number; after: number } {
  return daysOf(requestReach(reading));
}

/** How many days before and after a day a request must reach to hold it under `reach`. */
function daysOf(reach: Reach): { before: number; after: number } {
  return {
    before: Math.max(0, Math.ceil(reach.startMs / DAY_MS)),
    after: Math.max(0, Math.ceil((DAY_MS - reach.endMs) / DAY_MS)),
  };
}

/**
 * Whether `range` holds `day`'s request under `reading`, as covers(range, requestFor(day,
 * reading)) says, for many days at once: the reach is worked out once, not per day (a run judges
 * every day it settled at each settling: 66,000 a resource in a year's backfill).
 */
export function holdsDayRequest(reading: ServerReading): (day: DayString, range: DayRange) => boolean {
  const { before, after } = requestDays(reading);
  return (day, range) => dayDiff(range.startdate, day) >= before && dayDiff(day, range.enddate) >= after;
}

/**
 * Whether items have shown both ends of the reading: its requests then reach as far as the server
 * was seen to serve, not as far as any server could (a reading learned afresh, which proves no
 * request short).
 */
export function hasEvidence(reading: ServerReading): boolean {
  return reading.headMs !== null && reading.tailMs !== null;
}

/** The request for one server day, `day`, with unproved bounds taken as exclusive. */
function requestForServerDay(day: DayString, reading: ServerReading): DayRange {
  return {
    startdate: addDays(day, startInclusive(reading) ? 0 : -1),
    enddate: addDays(day, endInclusive(reading) ? 0 : 1),
  };
}

/**
 * Two narrower requests that together hold everything `range` holds, under every reading (the
 * halves overlap by a day where a bound is not proved inclusive), or undefined when it cannot be
 * narrowed: it is one server day.
 */
export function halves(range: DayRange, reading: ServerReading): [DayRange, DayRange] | undefined {
  const width = Math.round((dayStartMs(range.enddate) - dayStartMs(range.startdate)) / DAY_MS);
  const [inStart, inEnd] = [startInclusive(reading) ? 1 : 0, endInclusive(reading) ? 1 : 0];
  // The middle day both halves leave out of the other: not past width - 2 + inEnd, or a range of
  // two server days under an exclusive enddate (D-1..D+1) would keep both in its first half.
  const half = Math.max(1 - inStart, Math.min(Math.floor(width / 2), width - 2 + inEnd));
  const middle = addDays(range.startdate, half);
  const first = { startdate: range.startdate, enddate: addDays(middle, 1 - inEnd) };
  const second = { startdate: addDays(middle, inStart), enddate: range.enddate };
  const narrower = (part: DayRange) =>
    covers(range, part) && (part.startdate > range.startdate || part.enddate < range.enddate);
  return narrower(first) && narrower(second) ? [first, second] : undefined;
}

/** `range` and `days` more on each side: the cap checks' wider requests. */
export function widened(range: DayRange, days: number): DayRange {
  return { startdate: addDays(range.startdate, -days), enddate: addDays(range.enddate, days) };
}

export function covers(outer: DayRange, inner: DayRange): boolean {
  return outer.startdate <= inner.startdate && outer.enddate >= inner.enddate;
}

export function sameRange(a: DayRange, b: DayRange): boolean {
  return a.startdate === b.startdate && a.enddate === b.enddate;
}

const TIME = Symbol('itemTime');

/**
 * Milliseconds since the epoch of an item's dt, or undefined when it has no readable one. Read
 * once an item (keptOnItem): a day's plan asks it of each item many times.
 */
export function itemTime(item: unknown): number | undefined {
  if (typeof item !== 'object' || item === null) return undefined;
  const time = keptOnItem(item, TIME, () => {
    const dt = (item as { dt?: unknown }).dt;
    return typeof dt === 'string' ? Date.parse(dt) : Number.NaN;
  });
  return Number.isNaN(time) ? undefined : time;
}

/** Whether a time (itemTime) was read: the filter of items with a readable dt. */
export function isTime(time: number | undefined): time is number {
  return time !== undefined;
}

/** The times of the items that have a readable dt, in the order the items came. */
export function datedTimes(items: readonly unknown[]): number[] {
  return items.map(itemTime).filter(isTime);
}

/** The UTC day of an item's dt, or undefined when it has no readable one. */
export function itemDay(item: unknown): DayString | undefined {
  const time = itemTime(item);
  return time === undefined ? undefined : dayOfTime(time);
}

/**
 * The times of an answer's items as it listed them, and its order, when it is an order by dt
 * (oldest or newest first) that every answer of the run came in too: undefined for an answer of
 * fewer than two items, with an item without a readable dt, or in another order.
 */
function listedByDt(
  reading: ServerReading,
  items: readonly unknown[],
): { times: number[]; order: 'oldest-first' | 'newest-first' } | undefined {
  if (items.length < 2) return undefined;
  const times = items.map(itemTime);
  if (times.some((time) => time === undefined)) return undefined;
  const order = orderOf(times as number[]);
  if (order !== reading.order || (order !== 'oldest-first' && order !== 'newest-first')) return undefined;
  return { times: times as number[], order };
}

/**
 * Whether a cut of an answer (our limit, a cap) spared every item of the UTC days `from` to `to`
 * (to `from` alone unless told) that its request covered: listed by dt, a cut drops the far end of
 * the order only, so an answer that runs past the days on that side (oldest first: after them;
 * newest first: before them) holds them whole, whether or not any item lies on the other side.
 * Only when this answer and every answer before it were in that order.
 */
export function cutSpares(
  reading: ServerReading,
  items: readonly unknown[],
  from: DayString,
  to: DayString = from,
): boolean {
  const listed = listedByDt(reading, items);
  if (listed === undefined) return false;
  const far = listed.times[listed.times.length - 1] as number;
  return listed.order === 'oldest-first' ? far >= dayStartMs(addDays(to, 1)) : far < dayStartMs(from);
}

/**
 * Whether an answer served every item of the UTC days `from` to `to` the server holds, whatever its
 * cut and its request: in the reading's order, it runs from before them to after them (cutSpares,
 * and its first item past them on the near side). A server that lists by dt serves every item
 * between an answer's first and last.
 */
export function answerSpans(
  reading: ServerReading,
  items: readonly unknown[],
  from: DayString,
  to: DayString = from,
): boolean {
  if (!cutSpares(reading, items, from, to)) return false;
  const near = itemTime(items[0]) as number;
  return reading.order === 'oldest-first' ? near < dayStartMs(from) : near >= dayStartMs(addDays(to, 1));
}

/**
 * Two requests that tell whether an empty `day` is empty on a server that lists by dt, where a
 * busy neighbour cuts every request that holds the day under every reading. `edge` is a nearby
 * day's own request (`edgeDay`, one whose item the run saw within a quarter hour of where the
 * server starts its day, oldest first, or ends it, newest first; else the day before or after):
 * its first item shows whether the server still starts (or ends) a request where the reading says
 * (edgeHolds), which the reading says alike of every day.
 * `spare` holds the day and that neighbour under the reading: if the server serves it from there,
 * its first items are the day's, if the day has any. Undefined while the order is not known, or
 * where the reading's day is not UTC's on that side (a zone, or a bound not yet proved): the
 * request would start (end) inside the busy neighbour's own hours, and be cut there.
 */
export function edgeRequests(
  day: DayString,
  reading: ServerReading,
  edgeDay?: DayString,
): { edge: DayRange; spare: DayRange } | undefined {
  const own = requestFor(day, reading);
  const startsAtMidnight = startReach(reading) === dayStartMs(day) - dayStartMs(own.startdate);
  const endsAtMidnight = endReach(reading) === dayStartMs(day) + DAY_MS - dayStartMs(own.enddate);
  if (reading.order === 'oldest-first' && startsAtMidnight)
    return {
      edge: requestFor(edgeDay ?? addDays(day, -1), reading),
      spare: { startdate: own.startdate, enddate: requestFor(addDays(day, 1), reading).enddate },
    };
  if (reading.order === 'newest-first' && endsAtMidnight)
    return {
      edge: requestFor(edgeDay ?? addDays(day, 1), reading),
      spare: { startdate: requestFor(addDays(day, -1), reading).startdate, enddate: own.enddate },
    };
  return undefined;
}

/**
 * Whether an answer to an edge request (edgeRequests) shows the server's interval starting no
 * later than the reading allows (oldest first), or ending no earlier (newest first): its first
 * item, in the reading's order, within a quarter hour of that bound. No reading moves a bound by
 * less than a quarter hour (time zones and whole days are multiples of one), so a bound that moved
 * the wrong way would have left that item out.
 */
export function edgeHolds(reading: ServerReading, edge: DayRange, answer: readonly unknown[]): boolean {
  const listed = listedByDt(reading, answer);
  if (listed === undefined) return false;
  const first = listed.times[0] as number;
  return listed.order === 'oldest-first'
    ? first < dayStartMs(edge.startdate) + startReach(reading) + QUARTER_HOUR_MS
    : first >= dayStartMs(edge.enddate) + endReach(reading) - QUARTER_HOUR_MS;
}

/**
 * A request that proves the server's day on one side, if the items at hand allow: one that
 * starts (or ends) at the midnight next to an item seen within a quarter hour of it. Should the
 * item come back, the bound on that side is tight. Undefined when that side is tight already or
 * no item is near enough to a midnight.
 */
export function proofRequest(
  reading: ServerReading,
  side: 'start' | 'end',
  items: readonly unknown[],
): DayRange | undefined {
  const tight =
    side === 'start'
      ? startReach(reading) <= (startInclusive(reading) ? 0 : DAY_MS)
      : endReach(reading) >= (endInclusive(reading) ? DAY_MS : 0);
  if (tight) return undefined;
  for (const item of items) {
    const time = itemTime(item);
    if (time === undefined) continue;
    // Asked of every item held after each answer: arithmetic, not a day's text and its parse.
    const sinceMidnight = time - Math.floor(time / DAY_MS) * DAY_MS;
    if (side === 'start' ? sinceMidnight < QUARTER_HOUR_MS : sinceMidnight >= DAY_MS - QUARTER_HOUR_MS)
      return requestForServerDay(dayOfTime(time), reading);
  }
  return undefined;
}

/**
 * Whether the bounds' evidence holds two readings (mixedReadings). One reading serves [a + S, b + E)
 * with S = s + o, E = e + o (s, e: 0 or 24 h; o within -14 h and +12 h), and S <= head, E > tail:
 * - a tail a day or more past the head fits no e - s;
 * - an end many items held to (E within hours of the tail) at or past the head fits only e = 24 h,
 *   so o = E - 24 h, which must be -14 h or more: a tail an hour or more below 10 h cannot be. The
 *   new zone's early head beside the old zone's held end: a server day moved earlier while the run
 *   read, seen by a queued worker whose answers had not held to the new start.
 */
function twoReadings(reading: ServerReading): boolean {
  const { headMs, tailMs } = reading;
  if (headMs === null || tailMs === null) return false;
  if (tailMs - headMs >= DAY_MS) return true;
  const moves = movesOf.get(reading);
  const endHeld =
    moves !== undefined && heldNear(moves.end, endReach(reading) - HOUR_MS, endReach(reading)).held;
  return endHeld && headMs <= tailMs && tailMs < EARLIEST_END_MS + DAY_MS - HOUR_MS;
}

/**
 * An answer's items against the request `range`: every readable time, and of those near enough
 * to be its, each one's offset from the startdate's midnight (a head) and the enddate's (a tail).
 */
function boundOffsets(
  range: DayRange,
  itemTimes: readonly (number | undefined)[],
): { times: number[]; heads: number[]; tails: number[] } {
  const start = dayStartMs(range.startdate);
  const end = dayStartMs(range.enddate);
  const times: number[] = [];
  const heads: number[] = [];
  const tails: number[] = [];
  for (const time of itemTimes) {
    if (time === undefined) continue;
    times.push(time);
    if (time < start - PLAUSIBLE_MS || time >= end + DAY_MS + PLAUSIBLE_MS) continue;
    heads.push(time - start);
    tails.push(time - end);
  }
  return { times, heads, tails };
}

/**
 * Folds one response into the reading: bound and server-day evidence from its items' dt, the
 * order they came in, and the largest response. Mutates and returns `reading`.
 */
export function learnFromResponse(
  reading: ServerReading,
  range: DayRange,
  items: readonly unknown[],
  /**
   * Whether the answer may have been cut, where the asker knows its limit ('limit': it filled the
   * limit, which its size then says all of); else told by its size.
   */
  cut?: boolean | 'limit',
  /** The items' times (itemTime), where the caller read them already. */
  itemTimes: readonly (number | undefined)[] = items.map(itemTime),
): ServerReading {
  const reach = evidenceReach(reading);
  const before = {
    startMs: reading.headMs === null ? null : reach.startMs,
    endMs: reading.tailMs === null ? null : reach.endMs,
  };
  // Cut by the asker's limit (a small request beside a cap as large as our largest limit) as much
  // as by a cap: its far end holds to no bound.
  const mayBeCut = cut === true || cut === 'limit' || items.length >= reading.largestResponse;
  const { times, heads, tails } = boundOffsets(range, itemTimes);
  // The items that moved a bound, written beside the reading once the answer is read.
  let setStart: number | undefined;
  let setEnd: number | undefined;
  for (const head of heads)
    if (reading.headMs === null || head < reading.headMs) {
      reading.headMs = head;
      setStart = dayStartMs(range.startdate) + head;
    }
  for (const tail of tails)
    if (reading.tailMs === null || tail > reading.tailMs) {
      reading.tailMs = tail;
      setEnd = dayStartMs(range.enddate) + tail;
    }
  if (setStart !== undefined && reading.headMs !== null)
    restsOn(reading).start = { time: setStart, offset: reading.headMs };
  if (setEnd !== undefined && reading.tailMs !== null)
    restsOn(reading).end = { time: setEnd, offset: reading.tailMs };
  const order = orderOf(times);
  const kept = mayBeCut ? keptSide(reading, order) : undefined;
  noteMoves(reading, before, {
    heads,
    tails,
    mayBeCut,
    whole: !(cut ?? mayBeCut),
    ...(kept ? { kept } : {}),
  });
  if (twoReadings(reading)) runAnswers(reading).mixed = true;
  return learnFromAnswer(
    reading,
    items,
    times,
    order,
    dayDiff(range.startdate, range.enddate),
    cut === 'limit',
  );
}

/** The item one bound of the evidence rests on: its time, and the head or tail it set. */
interface BoundItem {
  time: number;
  offset: number;
}

/**
 * Beside the reading as its moves are: the items its bounds rest on. Stored with it
 * (boundItemTimes; startFrom loads them): a server that moved its day between two runs, capped below
 * nearly every day and listing newest first, answers a quiet day cut at the cap and reaching into
 * the day before, hours short of its end, and no item of the new reading can show that end moved.
 * The stored end's own item, asked again once the run turns turbulent (boundProof), can.
 */
const boundItemsOf = new WeakMap<ServerReading, { start?: BoundItem; end?: BoundItem }>();

/** The times (ms since the epoch) of the items a reading's bounds rest on; null where none does. */
export interface BoundItemTimes {
  startMs: number | null;
  endMs: number | null;
}

/** The times of the items the reading's bounds still rest on: stored with it. */
export function boundItemTimes(reading: ServerReading): BoundItemTimes {
  const items = boundItemsOf.get(reading);
  const start = items?.start?.offset === reading.headMs ? items?.start?.time : undefined;
  const end = items?.end?.offset === reading.tailMs ? items?.end?.time : undefined;
  return { startMs: start ?? null, endMs: end ?? null };
}

/** A stored reading's bounds resting on the items earlier runs stored with it (boundItemTimes). */
function restOnStored(reading: ServerReading, times: BoundItemTimes): void {
  if (times.startMs !== null && reading.headMs !== null)
    restsOn(reading).start = { time: times.startMs, offset: reading.headMs };
  if (times.endMs !== null && reading.tailMs !== null)
    restsOn(reading).end = { time: times.endMs, offset: reading.tailMs };
}

function restsOn(reading: ServerReading): { start?: BoundItem; end?: BoundItem } {
  const items = boundItemsOf.get(reading) ?? {};
  boundItemsOf.set(reading, items);
  return items;
}

/** A request that re-asks the item a bound of the reading rests on (boundProof). */
export interface BoundProof {
  range: DayRange;
  time: number;
  side: 'start' | 'end';
}

/**
 * The request that asks again the item the reading's bound rests on, with its day's request
 * under the reading: on the side the server's order keeps in a cut answer (newest first: the end;
 * oldest first: the start); none where it lists in no order. A rolling deploy at a run's start
 * leaves a reading whose bound the old reading's items set beside a canary the new one answered:
 * every proof agrees with the canary, and a new reading whose day ends earlier (which no item of
 * it can show) answers each day hours short. The bound's own item asked again is not served by
 * such a server.
 */
export function boundProof(reading: ServerReading): BoundProof | undefined {
  // In no order a cut answer keeps neither, and a quiet one's whole answers prove little: a bound
  // asked again there (both sides) turned a search's rolling deploy onto a path that settled a
  // quiet day short, so only a listed server's kept side is asked.
  const side = reading.order === null ? undefined : KEPT_BY_ORDER[reading.order];
  if (side === undefined || side === 'both') return undefined;
  const item = boundItemsOf.get(reading)?.[side];
  const offset = side === 'end' ? reading.tailMs : reading.headMs;
  if (item === undefined || item.offset !== offset) return undefined;
  const range = requestFor(dayOfTime(item.time), reading);
  return heldWhole(range, reading, item.time) ? { range, time: item.time, side } : undefined;
}

/**
 * Whether the answer to a bound proof shows the server no longer serves as far as the bound: its
 * item missing, and the answer's first item in the order the side keeps (the newest, for the
 * end) short of it. An item that went is missing too, inside what was served: not stale.
 */
export function boundStale(proof: BoundProof, answer: readonly unknown[]): boolean {
  const times = datedTimes(answer);
  if (times.includes(proof.time)) return false;
  if (times.length === 0) return true;
  return proof.side === 'end' ? Math.max(...times) < proof.time : Math.min(...times) > proof.time;
}

/**
 * The size an answer is judged against as a possible silent cap's cut: the largest the run had
 * when the answer was asked or, larger, when it is judged. Windows in flight at once answer
 * meanwhile: an answer smaller than one of theirs was not cut at a cap that let theirs through
 * (a cap lowered during the run is the run end's ceiling check's), so it needs no check of its
 * own. The reading holds the answer's own size by then: as large as that, it is still as large as
 * any other, as learnFromResponse judges it too.
 */
export function largestToJudge(before: number, reading: ServerReading): number {
  return Math.max(before, reading.largestResponse);
}

/**
 * What any answer says, whatever its request's bounds (a time slice's too): the order its items
 * came in and its size. Mutates and returns `reading`.
 */
export function learnFromAnswer(
  reading: ServerReading,
  items: readonly unknown[],
  times: readonly number[] = datedTimes(items),
  /** The order `times` came in, where the caller read it already. */
  order: ItemOrder | null = orderOf(times),
  /** Days between the request's dates, for a request by days. */
  span?: number,
  /** The answer filled the asker's limit: its size is the limit's, no evidence of a cap. */
  limited = false,
): ServerReading {
  reading.order = mergeOrder(reading.order, order);
  if (items.length > reading.largestResponse) reading.largestResponse = items.length;
  const caps = runAnswers(reading);
  noteLargest(caps, items.length, times, span, limited);
  const listing = listingOf(times);
  if (listing !== undefined) {
    if (caps.listing !== undefined && caps.listing !== listing) caps.listingChanged = true;
    caps.listing = listing;
  }
  // A server that now serves more than the proved cap has raised it.
  if (reading.cap !== null && items.length > reading.cap) reading.cap = null;
  return reading;
}

/**
 * The least size that counts as a ceiling: quiet days repeat small sizes, a cap that low is not
 * played (reading-session.ts, ceilingOf, judges days settled at a size by it too).
 */
export const CEILING_LEAST = 10;

/**
 * Distinct answers at the run's largest size, to requests of at least two spans, that make it a
 * cap the server since raised.
 */
const RAISED_ANSWERS = 3;

/**
 * The largest answer, the distinct answers that held it and the spans of their requests. A size
 * that three different answers stopped at, none larger, requests of one day and of five alike,
 * then exceeded, is a cap the server raised before the run could prove it (a deploy early in the
 * run): its old readers, where they still answer (a cache keyed by the request, a rolling deploy),
 * cut at it, and an answer of exactly that size may be cut although no cap was proved
 * (atRaisedCap). A steady server serves a wider request more, unless its days hold few items: as
 * many every day (a sampled source), its requests of one span peak at one size again and again,
 * and a wider one exceeds it. Where a steady server's answers do all that, answers of that size
 * are checked and the days settled at it read again, no day lost.
 */
function noteLargest(
  caps: RunAnswers,
  size: number,
  times: readonly number[],
  span: number | undefined,
  limited: boolean,
): void {
  const key = `${times[0]}:${times.at(-1)}`;
  if (size > caps.largest) {
    const spans = caps.largestSpans?.size ?? 0;
    if (caps.largest >= CEILING_LEAST && (caps.atLargest?.size ?? 0) >= RAISED_ANSWERS && spans >= 2)
      caps.proved.add(caps.largest);
    caps.largest = size;
    // Answers that filled our limit stopped at it, not at a cap (a server maximum steps the limit
    // down, and the search for it up again past answers that all filled the last one).
    caps.atLargest = new Set(limited ? [] : [key]);
    caps.largestSpans = new Set(span === undefined || limited ? [] : [span]);
  } else if (size === caps.largest && !limited) {
    caps.atLargest?.add(key);
    if (span !== undefined) caps.largestSpans?.add(span);
  }
}

export function orderOf(times: readonly number[]): ItemOrder | null {
  let rising = false;
  let falling = false;
  for (let i = 1; i < times.length; i++) {
    const previous = times[i - 1] as number;
    const current = times[i] as number;
    if (current > previous) rising = true;
    if (current < previous) falling = true;
  }
  if (rising && falling) return 'unordered';
  if (rising) return 'oldest-first';
  if (falling) return 'newest-first';
  return null;
}

function mergeOrder(known: ItemOrder | null, seen: ItemOrder | null): ItemOrder | null {
  if (seen === null) return known;
  if (known === null || known === seen) return seen;
  return 'unordered';
}

/**
 * One line for `status`, e.g. "startdate inclusive, enddate inclusive, UTC days, cap 100 per
 * response, newest first, instants honoured".
 */
export function describeReading(reading: ServerReading, reach: StoredReach = {}): string {
  const shift = serverDay(reading);
  const parts = [
    `startdate ${startInclusive(reading) ? 'inclusive' : 'taken as exclusive'}`,
    `enddate ${endInclusive(reading) ? 'inclusive' : 'taken as exclusive'}`,
    shift === 'utc'
      ? 'UTC days'
      : shift === 'unknown'
        ? 'server day not yet proved UTC (each day is asked with its neighbours)'
        : `server day starts ${shift === 'early' ? 'before' : 'after'} UTC midnight`,
    reading.cap === null ? 'no cap seen' : `cap ${reading.cap} per response`,
  ];
  if (reading.limitRefused !== null) parts.push(`limit ${reading.limitRefused} refused`);
  if (reading.order !== null) parts.push(reading.order.replace('-', ' '));
  if (reading.instants !== null) parts.push(`instants ${reading.instants}`);
  const further = reachedFurther(reading, reach);
  if (further !== undefined) parts.push(further);
  return parts.join(', ');
}

/** What a stored reach adds to each day's request, said for `status`; undefined for nothing. */
function reachedFurther(reading: ServerReading, reach: StoredReach): string | undefined {
  const evidence = daysOf(evidenceReach(reading));
  const kept = daysOf(widest(evidenceReach(reading), fullReach(reach)));
  const days = (n: number) => (n === 1 ? 'a day' : `${n} days`);
  const sides = [
    kept.before > evidence.before ? `${days(kept.before - evidence.before)} further back` : '',
    kept.after > evidence.after ? `${days(kept.after - evidence.after)} further on` : '',
  ].filter((side) => side !== '');
  if (sides.length === 0) return undefined;
  return `each day asked ${sides.join(' and ')} since a run saw the server's day move`;
}
