import { addDays, DAY_MS, type DayString, dayOfTime, dayStartMs, HOUR_MS } from '../time/days.js';
import {
  CEILING_LEAST,
  type DayRange,
  datedTimes,
  type ItemOrder,
  isTime,
  itemTime,
  sameRange,
} from './server-reading.js';

/**
 * What a run knows of whether one source and resource's server still reads requests the way the
 * run's reading says: the run's proofs. A reading is learned from items served (server-reading.ts)
 * and only ever narrows requests, so a server that changes its reading while the tool reads (a
 * deploy, a rolling deploy answering old and new readings at random) answers the narrow requests
 * with less than their days, silently: an exclusive end bound answers (D, D) with nothing at all.
 * No answer alone can tell a short day from a quiet one. So a day is settled under a proof:
 *
 *   settling --(a stretch of days settled, or the run's end)--> proving --(canary whole)--> settling
 *                                                             |
 *                                                    (canary short) --> stale: reading learned
 *                                                    again, every day settled since the last
 *                                                    passed proof reopened, back to settling
 *
 * The proof re-asks the canary, a day already held whole (the settled day with the most items),
 * under the reading as it stands: every item it held must come back. Its cost is one request a
 * stretch, not one a day. Beside the proofs, two checks cost nothing: a day's answer holding fewer
 * of its items than one answer of the run already held (a neighbour's, an earlier one) is short;
 * and an answer holding none of its day's items is never settled alone: it is asked again, and
 * the canary is asked at once.
 *
 * Pure: the day's plan (day-plan.ts) asks what to request and reports answers here.
 */
export interface ReadingSession {
  /** Per day, what the run's answers held of it: most items in one, earliest and latest item. */
  seen: Map<DayString, DaySpan>;
  /** Per day settled this run, what it held: a later answer holding more of it reopens it. */
  held: Map<DayString, DaySpan>;
  /**
   * Days settled before the run proved a cap, with the most items one answer for them held: one
   * that reached the cap proved since may have been cut (closeRun).
   */
  uncapped: Map<DayString, number>;
  /**
   * Of `uncapped`, the answer each day was settled on, by its first and last item: an empty day
   * asked with its neighbour settles on the neighbour's answer, one answer at one size, not two.
   */
  settledOn: Map<DayString, string>;
  /**
   * Days settled on answers other than their own judged whole below the caps known then, with the
   * largest of them: a cut day's halves or time slices, or the reading check's answers a day
   * settled on the word of (a stored reading checked on an answer a cap cut proves nothing). A cap
   * proved since (a deploy lowered it, a server restarted with a lower one) may have cut one. Kept
   * apart from `uncapped`: a steady server's halves repeat sizes below its cap, and the check's
   * answers are no day's own, and no ceiling (ceilingOf) is looked for among them.
   */
  cutUncapped: Map<DayString, number>;
  /**
   * Per day settled this run, the request it was settled under, the reading's generation then
   * (ResourceKnowledge.relearned) and the reading object: a reading that learns more since may find
   * that request never held the day whole (reopenUncovered).
   */
  settledBy: Map<DayString, SettledUnder>;
  /** The day the proofs re-ask, and the times of the items it held whole. */
  canary?: Canary;
  /**
   * A cut answer the proofs re-ask (CutCanary): without a canary, or where it was taken before the
   * canary (`cutFirst`). A canary taken later may have been settled after the server changed, and
   * then holds under the new reading as every day since does: the older proves more.
   */
  cutCanary?: CutCanary;
  cutFirst?: boolean;
  /** Days settled since the last passed proof, oldest first; a failed proof reopens them. */
  unproved: DayString[];
  /** Days a failed proof reopened: the run reads them again (or the next run, first). */
  reopened: DayString[];
  /** Days a passed proof proved, not yet recorded in the ledger (takeProofs). */
  proved: DayString[];
  /** Reopened days the ledger has not recorded yet (takeProofs, ledgerTook). */
  unledgered: Set<DayString>;
  /** Days flagged while the reading changed that the run reads again (readAgain): once each. */
  readAgain: Set<DayString>;
  /** Days settled since the last proof was asked. */
  sinceProof: number;
  /**
   * Days whose own request the run asked (a window's, open or not, or the day after a stretch):
   * their answers hold what a reading that lost the end of the day before still serves of it.
   */
  ownAsked: Set<DayString>;
  /**
   * A settled day was found short by a later answer (noteAnswer): the next day the run would
   * settle is not, and the reading is learned again first.
   */
  lapsed: boolean;
  /**
   * The run's latest answers to requests by days, each with its items' times: judged again after
   * every answer, against what the reading has learned since (mixedAnswers).
   */
  answers: KeptAnswer[];
  /**
   * An answer of the run lacked what the reading, as the run learned it since, says it served: two
   * readings answered (a rolling deploy), though no proof found the reading stale.
   */
  mixed: boolean;
  /**
   * The server may still be answering two readings: a stale verdict came this run (here, or for
   * another resource of the source), or the proofs re-ask a cut answer (proveRun).
   */
  turbulent: boolean;
  /** A stale verdict of this resource came this run (staleFound): what its reopened days are said to be read again for. */
  provedStale: boolean;
  /** Proofs passed in a row since the last stale verdict. */
  passedInRow: number;
  /**
   * Unproved days one proof passed since they settled, while the server may answer two readings
   * (`turbulent`): the next pass proves them. A pass asked before a day settled says nothing of it.
   */
  passedOnce: Set<DayString>;
  /** The run started from a reading earlier runs proved: the longest stretch until stale (provedBefore). */
  provedBefore?: boolean;
  /** Requests with instants an empty day's check asked while the run did not know them honoured. */
  instantAsks: number;
  /** Proofs this run: passed, failed, and the requests they asked. */
  proofs: { passed: number; failed: number; requests: number };
  /**
   * Where this run's proofs start among their limits (proofLimit), drawn as the session starts: a
   * cache that holds answers from one night's run to the next (the lookback asks the same days
   * each night, the canary may be the same day) holds another run's proof at another limit.
   */
  proofSalt: number;
  /**
   * Sizes of answers seen cut without our limit or a proved cap to say so: a request holding a day
   * whole came back below our limit with fewer of its items than another answer held (a cap lowered
   * by a deploy, answered beside the old reading). An answer of such a size is taken as cut.
   */
  cutSeen: Map<number, number>;
  /**
   * Items of the days settled this run, by quarter hour of their day (each day counted once, as
   * first settled): when in the day a day's items come. A day settled whole with none in hours
   * that hold a large share of the others' items was cut there (shapedCeilingOf).
   */
  dayShape: { quarters: number[]; days: Set<DayString> };
}

/**
 * The request a day was settled under, and which reading it was asked under: its generation
 * (ResourceKnowledge.relearned) and the reading object itself. A queued worker that loads the
 * run's reading afresh holds another object, which may know less: it judges no day settled
 * under the one before.
 */
export interface SettledUnder {
  range: DayRange;
  relearned: number;
  reading: object;
  /**
   * Read in parts: its request's answer was cut, the day read in halves or time slices. Whole by
   * the reading the parts were asked under (bounds, instants), not by its request alone.
   */
  parts?: boolean;
}

const QUARTER_HOUR_MS = HOUR_MS / 4;

/** Days either side of an empty day searched for one whose items show where the server's day starts. */
const EDGE_DAYS_SEARCHED = 7;

/**
 * The nearest day to `day` whose items the run saw within a quarter hour after its midnight
 * (oldest first; before its last, newest first): its own request, asked for a few items, shows
 * whether the server still serves from that midnight (server-reading.ts, edgeRequests). A quiet
 * neighbour's first item often comes later, and the empty day between it and a busy one was
 * flagged though a day further off would have shown the same. None for an order not by dt.
 */
export function edgeDayOf(
  session: ReadingSession,
  day: DayString,
  order: ItemOrder | null,
): DayString | undefined {
  if (order !== 'oldest-first' && order !== 'newest-first') return undefined;
  for (let step = 1; step <= EDGE_DAYS_SEARCHED; step++)
    for (const other of [addDays(day, -step), addDays(day, step)]) {
      const span = session.seen.get(other);
      if (span === undefined) continue;
      const start = dayStartMs(other);
      const near =
        order === 'oldest-first'
          ? span.first < start + QUARTER_HOUR_MS
          : span.last >= start + DAY_MS - QUARTER_HOUR_MS;
      if (near) return other;
    }
  return undefined;
}

/** Items of one day in an answer or held: how many, the earliest and the latest (epoch ms). */
export interface DaySpan {
  count: number;
  first: number;
  last: number;
}

export interface Canary {
  day: DayString;
  times: readonly number[];
  /**
   * No proof found the day whole (a queued run's planner has none better): an answer holding an
   * item of it that it lacks shows it was settled short, under a reading already stale.
   */
  unproved?: true;
}

/**
 * A cut answer to a settled day's request, listed oldest or newest first: a capped source whose
 * days all hold more than a canary may (a cap of 60, days of 20 to 200) has no day to re-ask
 * whole, and went unproved. The same request asked again of a server that holds still lists the
 * same items first, so comes back at the same size with the same first and last item; a zone or
 * bound moved serves another span, and the listing's first item moves with the end it starts
 * from (newest first the span's end, oldest first its start). Taken once, from the run's first
 * such answer (after a stale verdict, the first under the reading learned again), so later days
 * are proved against what the server served before them; and only from an answer whose latest
 * item falls on its day, a day not open (day-plan.ts, canaryOf): one holding only a neighbour's
 * items says nothing of the day it was to serve, and one reaching past the day may hold items
 * still coming in (the day after, open).
 */
export interface CutCanary {
  day: DayString;
  range: DayRange;
  count: number;
  first: number;
  last: number;
}

/** Days settled between two proofs: a proof's request is spread over this many days' requests. */
export const STRETCH = 8;
/**
 * The longest stretch. Each proof passed in a row doubles it (8, 16, 32, 64): a server that holds
 * still pays a proof per 64 days settled, not per 8, and a stale verdict brings it back to 8. A
 * deploy after a long quiet then reopens the days of one long stretch, read again once. The wide
 * search (reading-changes.trials.ts) settled fewer days short so, not more: 9 of 6,385 where a
 * fixed stretch of 8 settled 12, the 9 among those 12.
 */
const STRETCH_MOST = 64;

/**
 * A run from a reading earlier runs stored and proved starts at the longest stretch, as after
 * proofs passed in a row: a 365-day backfill from it asks one proof per 64 days from its first,
 * not 8, 16 and 32 first (three requests a resource). Its first days are proved all the same,
 * by the stretch's proof or the run's end; a stale verdict brings the stretch back to 8.
 */
export function provedBefore(session: ReadingSession): void {
  if (session.proofs.failed === 0) session.provedBefore = true;
}

/** Days to settle before the next proof: STRETCH, doubled by each proof passed in a row. */
export function stretchOf(session: ReadingSession): number {
  const passed = session.provedBefore === true ? 3 : session.passedInRow;
  return Math.min(STRETCH_MOST, STRETCH * 2 ** Math.min(passed, 3));
}
/** Items a canary may hold: small enough to keep, and to come back whole under any cap seen. */
export const CANARY_MOST = 500;

/**
 * A new run's session. `proofSalt`: drawn at random by default (each run's own start); a search
 * that replays a run request for request gives one of its seed.
 */
export function newSession(proofSalt = Math.floor(Math.random() * 2 ** 30)): ReadingSession {
  return {
    seen: new Map(),
    held: new Map(),
    uncapped: new Map(),
    settledOn: new Map(),
    cutUncapped: new Map(),
    settledBy: new Map(),
    unproved: [],
    reopened: [],
    proved: [],
    unledgered: new Set(),
    readAgain: new Set(),
    sinceProof: 0,
    ownAsked: new Set(),
    lapsed: false,
    turbulent: false,
    provedStale: false,
    answers: [],
    mixed: false,
    passedInRow: 0,
    passedOnce: new Set(),
    instantAsks: 0,
    proofs: { passed: 0, failed: 0, requests: 0 },
    proofSalt,
    cutSeen: new Map(),
    dayShape: { quarters: new Array<number>(QUARTERS_A_DAY).fill(0), days: new Set() },
  };
}

/**
 * Per day, the items one answer held: what the day's own answer must reach. A day settled this run
 * that an answer shows held less (an item earlier or later than any it held, or more items) is
 * reopened: its own request missed what a neighbour's served.
 */
export function noteAnswer(
  session: ReadingSession,
  items: readonly unknown[],
  /** The items' times (itemTime), where the caller read them already. */
  times: readonly (number | undefined)[] = items.map(itemTime),
): void {
  for (const [day, span] of spansByDay(times)) {
    const seen = session.seen.get(day);
    session.seen.set(day, seen === undefined ? span : widest(seen, span));
    const held = session.held.get(day);
    if (held !== undefined && lacks(held, span)) {
      session.held.delete(day);
      session.unproved = session.unproved.filter((other) => other !== day);
      session.proved = session.proved.filter((other) => other !== day);
      reopen(session, day);
      // The day's own request missed what another served: the reading it was settled under no
      // longer holds its days, and the day being read now was asked under the same one.
      session.lapsed = true;
      // A canary held short would vouch for the short reading that served it.
      if (session.canary?.day === day) delete session.canary;
    }
  }
}

/**
 * Whether an answer to a request by days lacks the first or last item the run's answers showed of
 * a day where it serves every item (`holds`: the reading's span, or, of an answer that may be
 * cut, the side its order keeps): the server served less than the reading it was asked under. A
 * rolling deploy's old readers answering a request the new reading narrowed serve a day less, and
 * the day asked may have nothing in the hours lost: its neighbour's items there do. Judged before
 * the answer is noted.
 */
export function lacksSeen(
  session: ReadingSession,
  range: { startdate: DayString; enddate: DayString },
  served: readonly (number | undefined)[],
  holds: (time: number) => boolean,
): boolean {
  return lacksSeenOf(session, range, (time) => served.includes(time), holds);
}

/** lacksSeen, given how to tell whether the answer served a time. */
function lacksSeenOf(
  session: ReadingSession,
  range: { startdate: DayString; enddate: DayString },
  served: (time: number) => boolean,
  holds: (time: number) => boolean,
): boolean {
  const last = addDays(range.enddate, 1);
  for (let day = addDays(range.startdate, -1); day <= last; day = addDays(day, 1)) {
    const span = session.seen.get(day);
    if (span === undefined || span.count === 0) continue;
    for (const time of [span.first, span.last]) if (holds(time) && !served(time)) return true;
  }
  return false;
}

/** An answer to a request by days, kept to be judged again (mixedAnswers). */
export interface AnswerTrace {
  range: { startdate: DayString; enddate: DayString };
  times: readonly (number | undefined)[];
  /** Below our limit and any cap proved when it came. */
  belowCaps: boolean;
}

/**
 * A kept answer: its range, what servesWhole reads of it (its size and its last item's time), and
 * its items' times sorted, 8 bytes a time. A busy site's answers hold up to 10,000 items and a
 * session keeps ANSWERS_KEPT of them a resource: as arrays and Sets of numbers, about 40 MB of a
 * 96 MB heap that the windows' byte budget did not know of, and a busy backfill ran out of memory.
 */
export interface KeptAnswer {
  range: { startdate: DayString; enddate: DayString };
  belowCaps: boolean;
  count: number;
  last: number | undefined;
  /** The times of its items that have one, ascending. */
  sorted: Float64Array;
  /** Whether an item of it had no readable time. */
  undated: boolean;
}

/** The answers a session keeps: the run's latest, where a deploy's two readings meet. */
const ANSWERS_KEPT = 32;

export function keepAnswer(session: ReadingSession, answer: AnswerTrace): void {
  const dated = answer.times.filter(isTime);
  session.answers.push({
    range: answer.range,
    belowCaps: answer.belowCaps,
    count: answer.times.length,
    last: answer.times.at(-1),
    sorted: Float64Array.from(dated).sort(),
    undated: dated.length < answer.times.length,
  });
  if (session.answers.length > ANSWERS_KEPT) session.answers.shift();
}

/** Whether the kept answer served an item of `time` (binary search of its sorted times). */
export function keptServed(kept: KeptAnswer, time: number | undefined): boolean {
  if (time === undefined) return kept.undated;
  let low = 0;
  let high = kept.sorted.length - 1;
  while (low <= high) {
    const middle = (low + high) >>> 1;
    const found = kept.sorted[middle] as number;
    if (found === time) return true;
    if (found < time) low = middle + 1;
    else high = middle - 1;
  }
  return false;
}

/**
 * Whether an answer the session kept lacks the first or last item the run saw of a day the
 * reading, as learned since, says it served whole (`holds`, judged as lacksSeen judges a new
 * answer): the answer came from another reading than the answers the reading was learned from.
 */
export function mixedAnswers(
  session: ReadingSession,
  holds: (answer: KeptAnswer) => (time: number) => boolean,
): boolean {
  return session.answers.some(lacksSeenSince(session, holds));
}

/** Whether a kept answer lacks what the run saw since where `holds` says it served whole (mixedAnswers). */
function lacksSeenSince(
  session: ReadingSession,
  holds: (answer: KeptAnswer) => (time: number) => boolean,
): (answer: KeptAnswer) => boolean {
  return (answer) => lacksSeenOf(session, answer.range, (time) => keptServed(answer, time), holds(answer));
}

/**
 * Reopens the days settled on an answer the session kept that lacks what the run saw since of a
 * day the reading says it served whole (mixedAnswers): that answer came from another reading, and
 * so may the day's. An end bound turned exclusive on a server whose day starts before UTC's leaves
 * a day's last hours to the next server day, which only the next day's answer shows.
 */
export function reopenMixed(
  session: ReadingSession,
  holds: (answer: KeptAnswer) => (time: number) => boolean,
): void {
  const lacking = session.answers.filter(lacksSeenSince(session, holds));
  if (lacking.length === 0) return;
  for (const [day, under] of session.settledBy) {
    if (!lacking.some((answer) => sameRange(answer.range, under.range))) continue;
    session.settledBy.delete(day);
    reopen(session, day);
  }
}

/**
 * Whether the server now cuts a request sooner: an answer kept by the session to the same request
 * held more items than these `times`, and every one of them. A cap lowered since cuts the same
 * listing at its new size, an earlier answer below every cap too (93 items, then 60 of them under
 * a cap lowered from 100 to 60); a steady server answers a request the same way, or, listing at
 * random, as many items. Judged before the answer is kept.
 */
export function cutSooner(
  session: ReadingSession,
  range: DayRange,
  times: readonly (number | undefined)[],
): boolean {
  if (times.length === 0) return false;
  return session.answers.some(
    (kept) =>
      sameRange(kept.range, range) &&
      kept.count > times.length &&
      times.every((time) => keptServed(kept, time)),
  );
}

/**
 * An answer of `items` to a request that holds `day` whole under the reading, below our `limit`:
 * holding fewer of the day's items than an earlier answer did, its size is one a cap may have cut
 * at. True once the same size was seen so twice: a bound or a zone that moved also shortens a
 * day's answer, but to sizes that rarely repeat; a cap cuts every answer it reaches at its own.
 * Judged before the answer is noted.
 */
export function noteCut(
  session: ReadingSession,
  day: DayString,
  items: readonly unknown[],
  limit: number,
): boolean {
  const seen = session.seen.get(day);
  if (seen === undefined || items.length === 0 || items.length >= limit) return false;
  if ((spansByDay(items.map(itemTime)).get(day)?.count ?? 0) >= seen.count) return false;
  const sightings = (session.cutSeen.get(items.length) ?? 0) + 1;
  session.cutSeen.set(items.length, sightings);
  return sightings >= 2;
}

/**
 * Whether the day's items as held are short of what the run's answers held of it: the reading
 * the day was asked under no longer serves all of it (or an item went, which a re-read settles).
 */
export function shortOfSeen(session: ReadingSession, day: DayString, held: readonly unknown[]): boolean {
  const seen = session.seen.get(day);
  if (seen === undefined) return false;
  const span = spansByDay(held.map(itemTime)).get(day);
  return span === undefined || lacks(span, seen);
}

/** Whether `held` lacks what `other` shows of the same day. */
function lacks(held: DaySpan, other: DaySpan): boolean {
  return other.count > held.count || other.first < held.first || other.last > held.last;
}

function widest(a: DaySpan, b: DaySpan): DaySpan {
  return {
    count: Math.max(a.count, b.count),
    first: Math.min(a.first, b.first),
    last: Math.max(a.last, b.last),
  };
}

function spansByDay(times: readonly (number | undefined)[]): Map<DayString, DaySpan> {
  const spans = new Map<DayString, DaySpan>();
  for (const time of times) {
    if (time === undefined) continue;
    const day = dayOfTime(time);
    const span = spans.get(day);
    if (span === undefined) spans.set(day, { count: 1, first: time, last: time });
    else {
      span.count += 1;
      if (time < span.first) span.first = time;
      if (time > span.last) span.last = time;
    }
  }
  return spans;
}

/**
 * A day settled whole with `items` of its own: unproved until the next proof; true when one is
 * due. `room`: most items one answer holds uncut (our limit, a cap proved).
 */
export function settled(
  session: ReadingSession,
  day: DayString,
  items: readonly unknown[],
  answers: {
    room: number;
    served: number;
    readAsCut: boolean;
    alone: boolean;
    answer?: string;
    /** Most items an answer of the reading's check held, judged whole, as the day settled on its word. */
    checkedAt?: number;
    /** The request the day was asked under, and the reading (generation, object) then (reopenUncovered). */
    under?: SettledUnder;
  },
): boolean {
  const { room } = answers;
  if (!session.unproved.includes(day)) session.unproved.push(day);
  if (answers.under === undefined) session.settledBy.delete(day);
  else session.settledBy.set(day, answers.under);
  if (!answers.readAsCut) {
    session.uncapped.set(day, answers.served);
    if (answers.answer === undefined) session.settledOn.delete(day);
    else session.settledOn.set(day, answers.answer);
  }
  const relied = Math.max(answers.readAsCut ? answers.served : 0, answers.checkedAt ?? 0);
  if (relied > 0) session.cutUncapped.set(day, relied);
  noteShape(session.dayShape, day, items);
  // A day settled empty holds an empty span: any item of it a later answer holds reopens it.
  session.held.set(
    day,
    spansByDay(items.map(itemTime)).get(day) ?? { count: 0, first: Infinity, last: -Infinity },
  );
  session.sinceProof += 1;
  // The canary's request may hold its neighbours too (a server day off UTC's): a third of the room.
  // Where it holds the day alone (UTC's), a day just below the room will do: a busy source, whose
  // days all hold more than a third, has a canary too.
  if (items.length < (answers.alone ? room : Math.floor(room / 3) + 1)) offerCanary(session, day, items);
  return session.sinceProof >= stretchOf(session) && canaryDay(session) !== undefined;
}

/**
 * A day held whole becomes the canary if it holds more items than the canary (the more items, the
 * more hours a short reading cannot hide), as long as no proof has passed on the canary yet: once
 * proved, its items are known whole, and a day settled since may be short.
 */
function offerCanary(session: ReadingSession, day: DayString, items: readonly unknown[]): void {
  if (session.proofs.passed > 0 && session.canary !== undefined) return;
  const times = datedTimes(items);
  if (times.length === 0 || times.length > CANARY_MOST) return;
  if (session.canary !== undefined && session.canary.times.length >= times.length) return;
  session.canary = { day, times };
  if (session.cutCanary !== undefined) session.cutFirst = true;
}

/** A cut answer the run may re-ask: kept if the run has one already (the older proves more). */
export function offerCutCanary(session: ReadingSession, canary: CutCanary): void {
  if (session.cutCanary !== undefined) return;
  session.cutCanary = canary;
  session.cutFirst = session.canary === undefined;
}

/** What the next proof asks: the cut canary where it is older than the canary, else the canary. */
export function proofCanary(session: ReadingSession): { whole: Canary } | { cut: CutCanary } | undefined {
  const { canary, cutCanary } = session;
  if (cutCanary !== undefined && (canary === undefined || session.cutFirst === true))
    return { cut: cutCanary };
  return canary === undefined ? undefined : { whole: canary };
}

/**
 * The limit the next proof asks with: below the day's `limit` and above what its canary holds, another
 * one each proof of the run, from a start of the run's own (proofSalt). A cache keyed on the whole
 * address (a CDN in front of the service) answers a request it held before a deploy as it did
 * then: a canary asked again at its own address, or at an earlier run's proof's, passes while
 * every new request hears the new reading. Under one reading the answer is the same at any limit
 * above the canary's size.
 */
export function proofLimit(session: ReadingSession, limit: number): number {
  const asked = proofCanary(session);
  if (asked === undefined) return limit;
  const held = 'whole' in asked ? asked.whole.times.length : asked.cut.count;
  const room = limit - held - 2;
  return room <= 0 ? limit : limit - 1 - ((session.proofSalt + session.proofs.requests) % room);
}

/** The day the next proof asks about; none without a canary of either kind. */
export function canaryDay(session: ReadingSession): DayString | undefined {
  const asked = proofCanary(session);
  return asked === undefined ? undefined : 'cut' in asked ? asked.cut.day : asked.whole.day;
}

/** A proof asks one more request (the item a bound rests on: day-plan.ts, proveOnce). */
export function proofAsksMore(session: ReadingSession): void {
  session.proofs.requests += 1;
}

/** The next days the run's end asks at most per resource: one a stretch of days settled. */
export const NEXT_DAYS_MOST = 4;

/**
 * The days after the stretches of days settled this run and held, latest first, not after
 * `today`, whose own request the run has not asked (NEXT_DAYS_MOST of them). A reading that came
 * to miss the end of a day (an end bound turned exclusive on a server whose day starts before
 * UTC's: the last hours of each UTC day are the next server day's) serves them in the next day's
 * answer, which shows the day short: noted after the day settled, it reopens it (noteAnswer);
 * before, the day's own answer is short of it (shortOfSeen). Within a stretch the next day's
 * window asks it; after a stretch's last day (a range's last), only the run's end does, or a
 * proof's canary with an item in those hours.
 */
export function daysAfterStretches(session: ReadingSession, today: DayString): DayString[] {
  const read = new Set([...session.held.keys(), ...session.ownAsked]);
  return stretchEnds([...session.held.keys()], read, today).map((day) => addDays(day, 1));
}

/**
 * Of `days`, those whose next day is not in `read` and not after `today`: the last days of
 * stretches, latest first, NEXT_DAYS_MOST of them.
 */
export function stretchEnds(
  days: readonly DayString[],
  read: ReadonlySet<DayString>,
  today: DayString,
): DayString[] {
  return days
    .filter((day) => !read.has(addDays(day, 1)) && addDays(day, 1) <= today)
    .sort()
    .reverse()
    .slice(0, NEXT_DAYS_MOST);
}

/** A day settled by another process, held as the warehouse holds it (`times`: its items' dt). */
export function holdSettled(session: ReadingSession, day: DayString, times: readonly number[]): void {
  session.held.set(day, spansByDay(times).get(day) ?? { count: 0, first: Infinity, last: -Infinity });
}

/** What a proof holds: the days it proves, taken as it is asked (days settled meanwhile wait for the next). */
export function startProof(session: ReadingSession): DayString[] {
  session.sinceProof = 0;
  session.proofs.requests += 1;
  return [...session.unproved];
}

/**
 * The canary's answer, asked under the run's reading: 'holds' when it held every item of the
 * canary day it held before; 'stale' when it lacked one, or (an unproved canary) held one of the
 * day the canary lacks; 'unproven' when it lacked one but may have been cut (`cut`: at our limit
 * or a proved cap), which proves nothing either way.
 */
export function proofVerdict(canary: Canary, answer: readonly unknown[], cut: boolean): ProofVerdict {
  const times = new Set<number>();
  for (const item of answer) {
    const time = itemTime(item);
    if (time !== undefined) times.add(time);
  }
  if (canary.unproved === true) {
    const held = new Set(canary.times);
    for (const time of times) if (!held.has(time) && dayOfTime(time) === canary.day) return 'stale';
  }
  if (canary.times.every((time) => times.has(time))) return 'holds';
  return cut ? 'unproven' : 'stale';
}

export type ProofVerdict = 'holds' | 'stale' | 'unproven';

/**
 * The cut canary's request asked again: 'holds' at its size with its first and last item;
 * 'stale' where it lists another first item, another last one at its size, or comes back smaller
 * and not cut (the span it serves holds fewer items than it did); 'unproven' at another size
 * that may be cut (`cut`), a cap moved, which the cap checks prove.
 */
export function cutProofVerdict(
  canary: CutCanary,
  answer: readonly unknown[],
  cut: (count: number) => boolean,
): ProofVerdict {
  const first = answer.length > 0 ? itemTime(answer[0]) : undefined;
  const last = answer.length > 0 ? itemTime(answer.at(-1)) : undefined;
  if (first !== canary.first) return 'stale';
  if (answer.length === canary.count) return last === canary.last ? 'holds' : 'stale';
  return answer.length < canary.count && !cut(answer.length) ? 'stale' : 'unproven';
}

/**
 * A proof's verdict on the days it proves. Passed: they are proved (after a stale verdict this
 * run, only once two proofs in a row passed: a rolling deploy answers either reading). Failed:
 * every unproved day is reopened, proved or not by this proof.
 */
export function proofAnswered(
  session: ReadingSession,
  proving: readonly DayString[],
  verdict: ProofVerdict,
  /** Which canary the proof asked (proofCanary). */
  asked: 'whole' | 'cut' = 'whole',
): void {
  if (verdict === 'unproven') {
    // A canary too large for one answer now: a smaller day's takes its place.
    if (asked === 'cut') delete session.cutCanary;
    else delete session.canary;
    return;
  }
  if (verdict === 'holds') {
    session.proofs.passed += 1;
    session.passedInRow += 1;
    // Under two readings one answer agrees by chance: a day is proved by two passes in a row since
    // it settled (a rolling deploy that began after the last pass answered the days since).
    const passed = session.turbulent ? proving.filter((day) => session.passedOnce.has(day)) : proving;
    if (session.turbulent) for (const day of proving) session.passedOnce.add(day);
    if (session.turbulent && session.passedInRow < 2) return;
    session.unproved = session.unproved.filter((day) => !passed.includes(day));
    for (const day of passed) if (!session.proved.includes(day)) session.proved.push(day);
    return;
  }
  session.proofs.failed += 1;
  staleFound(session);
}

/**
 * The reading proved stale (a proof failed, or a day came back short of what the run saw of it):
 * every day settled since the last passed proof is reopened, but `asking`, which its plan asks
 * again at once.
 */
export function staleFound(session: ReadingSession, asking?: DayString): void {
  serverChanged(session);
  session.provedStale = true;
  // Taken under the reading now stale: the reading learned again takes its own.
  delete session.cutCanary;
  for (const day of session.unproved) if (day !== asking) reopen(session, day);
  session.unproved = [];
  session.reopened = session.reopened.filter((day) => day !== asking);
  session.proved = session.proved.filter((day) => !session.reopened.includes(day));
}

export type ReopenCause = 'stale' | 'changed' | 'late evidence';

/**
 * Why these reopened days are read again: a stale verdict of a session, or a day flagged while the
 * server changed how it answers (readAgain: a turn of its maximum limit, say, proves no reading
 * stale), or evidence that came later (a cap, a bound that moved by hours). Not the proofs'
 * caution alone: a busy site's cut canary, or a deploy another resource of the source saw, makes
 * them ask twice, and no reading of these days proved stale.
 */
export function reopenedBecause(
  reopened: readonly { session: ReadingSession | undefined; day: DayString }[],
): ReopenCause {
  if (reopened.some(({ session }) => session?.provedStale === true)) return 'stale';
  if (reopened.some(({ session, day }) => session?.readAgain.has(day) === true)) return 'changed';
  return 'late evidence';
}

/**
 * A reading of the source's server was proved stale this run, this resource's or another's (a
 * queued run's planner hears it from the workers): the proofs here are asked as after a stale
 * verdict of their own (two in a row, the bound's item too), though no day is reopened on that
 * alone. A deploy changes the server, not one endpoint, and this endpoint's canary may have been
 * settled from the new reading: every proof then agrees while the days between heard either.
 */
export function serverChanged(session: ReadingSession): void {
  session.turbulent = true;
  session.passedInRow = 0;
  session.passedOnce.clear();
  session.provedBefore = false;
}

/**
 * With what the run proved of caps so far (`cut`: whether an answer of that size may have been
 * cut, at or above the cap or exactly at one proved and since raised): days settled before a cap
 * was proved whose answers it may have cut are reopened. Asked as each day settles (a queued
 * run's worker has no run's end of its own) and at the run's end.
 */
export function reopenUncapped(
  session: ReadingSession,
  cut: (served: number) => boolean,
  /** Days and sizes to judge: the session's own, or (a queued run's planner) the ledger's. */
  ...sizes: Map<DayString, number>[]
): void {
  for (const uncapped of sizes.length > 0 ? sizes : [session.uncapped, session.cutUncapped])
    for (const [day, served] of uncapped)
      if (cut(served)) {
        reopen(session, day);
        uncapped.delete(day);
      }
}

/** A size days were settled at that the run's end asks about: is it a cap? (day-plan.ts, checkCeiling) */
export type CeilingCheck = { day: DayString; size: number };

/**
 * The trace a cap lowered during the run leaves (a deploy: from 100 to 60, both below our limit):
 * every answer after it is smaller than the largest before, so none looks cut, and days settle at
 * the new cap. Days settled (in order) at one size three times or more, none larger since the
 * first, below our `limit`: that size and its first day, or undefined. Sizes a server that holds
 * still serves at random rarely peak three times.
 */
export function ceilingOf(session: ReadingSession, limit: number): CeilingCheck | undefined {
  const sizes = [...session.uncapped.values()];
  const days = [...session.uncapped.keys()];
  for (const [i, size] of sizes.entries()) {
    // At our limit, answers are cut by us: their days were read on as cut ones.
    if (size < CEILING_LEAST || size >= limit) continue;
    const since = sizes.slice(i);
    if (since.every((later) => later <= size) && answersAt(session, days.slice(i), size) >= 3)
      return { day: days[i] as DayString, size };
  }
  return undefined;
}

/**
 * Besides the ceiling (ceilingOf), the size days settled at most often, twice or more, with larger
 * days in between: a rolling deploy that lowered the cap answers larger days from its old reading
 * while its new one settles days at the new cap. Of sizes seen as often, the one first seen latest:
 * the new cap's size begins after the deploy, a steady server's repeats anywhere. Undefined where
 * that is `ceiling`, the ceiling found already. A steady server repeats some size in most runs of
 * 20 days (rarely in a nightly's 4): the check's two requests, no day read again.
 */
export function flappingCeilingOf(
  session: ReadingSession,
  limit: number,
  ceiling: { size: number } | undefined,
): CeilingCheck | undefined {
  const seen = new Map<number, { day: DayString; times: number }>();
  const days = [...session.uncapped.keys()];
  for (const [day, size] of session.uncapped) {
    if (size < CEILING_LEAST || size >= limit || seen.has(size)) continue;
    seen.set(size, { day, times: answersAt(session, days, size) });
  }
  let best: { day: DayString; size: number; times: number } | undefined;
  for (const [size, { day, times }] of seen)
    if (times >= 2 && (best === undefined || times > best.times || (times === best.times && day > best.day)))
      best = { day, size, times };
  if (best === undefined || best.size === ceiling?.size) return undefined;
  return { day: best.day, size: best.size };
}

const QUARTERS_A_DAY = 96;

/** Items of days settled whole a day's shape needs before hours without items say anything. */
const SHAPE_LEAST = 200;

/**
 * How unlikely, as -ln of its chance, an empty stretch must be to mark a day cut: e^-20, about one
 * in 500 million for a day whose items come as the run's other days' do.
 */
const SHAPE_IMPLAUSIBLE = 20;

function noteShape(shape: ReadingSession['dayShape'], day: DayString, items: readonly unknown[]): void {
  if (shape.days.has(day)) return;
  shape.days.add(day);
  const start = dayStartMs(day);
  for (const time of datedTimes(items))
    if (dayOfTime(time) === day) {
      const quarter = Math.floor((time - start) / QUARTER_HOUR_MS);
      shape.quarters[quarter] = (shape.quarters[quarter] ?? 0) + 1;
    }
}

/**
 * A third sign of a cap lowered during the run, beside the ceilings (ceilingOf, flappingCeilingOf),
 * for a rolling deploy that settled one day at its new cap: a server listing by dt cuts a day's
 * answer at one end, so the day settles with none of its items in its first (newest first) or last
 * hours. The run's other days tell how many items those hours hold: where a day's items, as many
 * as it settled with, would almost surely have had one there (SHAPE_IMPLAUSIBLE), the most
 * unlikely such day and its size, not one of `found` already. A steady server's day with a quiet
 * stretch the others lack (a survey started at noon) costs the check's requests, no day.
 */
export function shapedCeilingOf(
  session: ReadingSession,
  limit: number,
  found: readonly ({ size: number } | undefined)[],
): CeilingCheck | undefined {
  const { quarters } = session.dayShape;
  const total = quarters.reduce((sum, count) => sum + count, 0);
  if (total < SHAPE_LEAST) return undefined;
  let best: { day: DayString; size: number; weight: number } | undefined;
  for (const [day, size] of session.uncapped) {
    const span = session.held.get(day);
    if (size < CEILING_LEAST || size >= limit || span === undefined || span.count < CEILING_LEAST) continue;
    if (found.some((ceiling) => ceiling?.size === size)) continue;
    const start = dayStartMs(day);
    const first = Math.floor((span.first - start) / QUARTER_HOUR_MS);
    const last = Math.floor((span.last - start) / QUARTER_HOUR_MS);
    const outside = quarters.reduce(
      (sum, count, quarter) => (quarter < first || quarter > last ? sum + count : sum),
      0,
    );
    const weight = -span.count * Math.log1p(-Math.min(outside / total, 1 - 1e-12));
    if (weight >= SHAPE_IMPLAUSIBLE && (best === undefined || weight > best.weight))
      best = { day, size, weight };
  }
  return best === undefined ? undefined : { day: best.day, size: best.size };
}

/**
 * How many answers settled `days` at `size`: days settled on one answer (settledOn) count once.
 * The same items answered twice are no second sign of a cap.
 */
function answersAt(session: ReadingSession, days: readonly DayString[], size: number): number {
  const answers = new Set<string>();
  let unnamed = 0;
  for (const day of days) {
    if (session.uncapped.get(day) !== size) continue;
    const answer = session.settledOn.get(day);
    if (answer === undefined) unnamed += 1;
    else answers.add(answer);
  }
  return unnamed + answers.size;
}

/**
 * Days settled under a request the reading, as it has learned since, no longer holds the day
 * whole in (`covered` says no): reopened. On a server that holds still, what a reading learns
 * from items only ever narrows a day's request, so a request once judged whole stays so; one
 * that moved its day while the run read (a rolling deploy answering both zones) can leave a day
 * settled on a narrow answer whose request, under the reading the later answers taught, misses
 * the day's first or last hours, where no proof's canary looked. As each day settles (a queued
 * worker has no run's end of its own), only days settled under the reading's present generation
 * are judged: after a stale verdict the reading starts again from nothing, which proves no
 * request short. At the run's end (`final`) the days settled under earlier generations are judged
 * too, once the reading has items on both sides (`evidence`): a proof that passed after such a
 * day proved its canary answered alike, not that the day's request held it (a deploy that moved
 * the day's end while the old reading's items still held the reading's end settled the day hours
 * short, and every later proof, asked of the new deploy alone, held). So are the days settled
 * before a stale verdict of this run whatever the reading holds: one the verdict reset at the
 * run's very end has learned nothing since and allows any server day, so every such day settled
 * on a request narrower than the widest is read again (a rolling deploy's old readers answered
 * the canary that passed, its new ones the days). A reading merely loaded afresh (a queued
 * worker's) with no items on an end judges nothing: it knows less than the one the day was
 * settled under, not that it changed.
 */
export function reopenUncovered(
  session: ReadingSession,
  covered: (day: DayString, range: DayRange) => boolean,
  now: Omit<SettledUnder, 'range'> & { final?: boolean; evidence?: boolean },
): void {
  for (const [day, under] of session.settledBy) {
    const current = under.relearned === now.relearned && under.reading === now.reading;
    const staleSince = under.relearned < now.relearned;
    const judged = current || (now.final === true && (now.evidence === true || staleSince));
    // A day read in parts under a reading since proved stale: its request still covering it says
    // nothing of its parts (a slice a new reader answered as the dates it names ends at the
    // server's midnight, the day's last hours in no answer).
    const partsStale = under.parts === true && staleSince;
    if (!judged || (covered(day, under.range) && !partsStale)) continue;
    session.settledBy.delete(day);
    reopen(session, day);
  }
}

/**
 * A day flagged while the reading changed, to read again by the run (takeReopened); its own window
 * records it reopened in the ledger, for the next run. Once a run here: a rolling deploy as long as
 * the run flags it again at every pass (in memory, 200 such deploys asked 53% more requests than
 * without reading these days again, 27% with once; a queued run's passes go by the ledger, at most
 * three, as for any day reopened).
 */
export function readAgain(session: ReadingSession, day: DayString): void {
  if (session.readAgain.has(day)) return;
  session.readAgain.add(day);
  if (!session.reopened.includes(day)) session.reopened.push(day);
}

/** A day to read again (the run, takeReopened) and to record reopened (the ledger, takeProofs). */
function reopen(session: ReadingSession, day: DayString): void {
  if (!session.reopened.includes(day)) session.reopened.push(day);
  session.unledgered.add(day);
}

/**
 * What the proofs found for the ledger, with the window of `current` (settled now, so not
 * reopened): the days reopened it has not recorded, and the days proved. Reopened days stay due
 * until the ledger took them (ledgerTook); proved days go back if it did not (giveBackProofs).
 */
export function takeProofs(
  session: ReadingSession,
  current?: DayString,
): { reopened: DayString[]; proved: DayString[] } {
  const reopened = [...session.unledgered].filter((day) => day !== current).sort();
  const found = { reopened, proved: session.proved };
  session.proved = [];
  return found;
}

/** The ledger recorded what takeProofs found, and settled `current`: none of it is due any more. */
export function ledgerTook(
  session: ReadingSession,
  found: { reopened: readonly DayString[] },
  current?: DayString,
): void {
  for (const day of found.reopened) session.unledgered.delete(day);
  if (current !== undefined) session.unledgered.delete(current);
}

/** The ledger did not take what takeProofs found (its transaction failed): the proved are kept for the next. */
export function giveBackProofs(session: ReadingSession, found: { proved: readonly DayString[] }): void {
  for (const day of found.proved) if (!session.proved.includes(day)) session.proved.push(day);
}

/** The days reopened so far, handed to the run once. */
export function takeReopened(session: ReadingSession): DayString[] {
  const days = session.reopened.sort();
  session.reopened = [];
  return days;
}
