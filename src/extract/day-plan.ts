import { ApiError } from '../errors.js';
import type { WindowedResource } from '../schemas/resources.js';
import { addDays, type DayString, dayOfTime } from '../time/days.js';
import { readInSlices } from './day-slices.js';
import { itemIdentity } from './item-identity.js';
import { escalation, hintedStartLimit, startLimit, stepDown } from './limit-steps.js';
import {
  claimVerdict,
  type FetchedDay,
  type LimitPolicy,
  type Plan,
  type ResourceKnowledge,
  verdictReached,
} from './plan-steps.js';
import { quietAnswer, runRequest, widestRequest } from './quiet-mode.js';
import {
  checkByInstants,
  checkedByInstants,
  endQuiet,
  type ReadingCheckInput,
  readingChanged,
  readingStale,
  staleReading,
} from './reading-check.js';
import {
  type CeilingCheck,
  type CutCanary,
  canaryDay,
  ceilingOf,
  cutProofVerdict,
  cutSooner,
  daysAfterStretches,
  edgeDayOf,
  flappingCeilingOf,
  type KeptAnswer,
  keepAnswer,
  lacksSeen,
  mixedAnswers,
  newSession,
  noteAnswer,
  noteCut,
  offerCutCanary,
  type ProofVerdict,
  proofAnswered,
  proofAsksMore,
  proofCanary,
  proofLimit,
  proofVerdict,
  provedBefore,
  type ReadingSession,
  readAgain,
  reopenMixed,
  reopenUncapped,
  reopenUncovered,
  settled,
  shapedCeilingOf,
  shortOfSeen,
  staleFound,
  startProof,
  takeReopened,
} from './reading-session.js';
import {
  answerSpans,
  atCap,
  atNewCap,
  atRaisedCap,
  boundProof,
  boundStale,
  covers,
  cutSpares,
  type DayRange,
  datedTimes,
  earlierRunsReading,
  edgeHolds,
  edgeRequests,
  halves,
  hasEvidence,
  heldWhole,
  holdsDayRequest,
  isTime,
  itemDay,
  itemTime,
  largestToJudge,
  learnFromAnswer,
  learnFromResponse,
  listingChanged,
  mixedReadings,
  proofRequest,
  proveCap,
  provedWhole,
  requestFor,
  type ServerReading,
  sameRange,
  serverDay,
  servesPartOf,
  spansDay,
  suspectCap,
  widened,
} from './server-reading.js';
import {
  type DayAnswer,
  dayAnswerOf,
  daySlice,
  type InstantRange,
  instantsVerdict,
  type Slice,
  sliceRequest,
} from './time-slices.js';

/**
 * What to ask for one UTC day of a windowed resource, whatever the server's reading of the spec's
 * gaps (see server-reading.ts for how bounds and the server's day are learned). A plan yields
 * requests and is resumed with their answers (plan-steps.ts); fetchDay sends them. No I/O here:
 * a test feeds answers and reads the next request, or the day's outcome.
 *
 * 1. Ask the narrowest request that holds the whole day under every reading not ruled out. If
 *    its answer proves something new, ask again: narrower when the answer may have been cut,
 *    wider when the day may not all have been asked.
 * 2. No paging exists, so an answer may be cut short by our limit or by a silent cap:
 *    - an answer as long as the limit is asked again with a larger one, up to the ceiling;
 *    - an answer at least as long as any before it might be a silent cap. Wider requests settle
 *      it: more items back means no cap; no more, with items the first answer lacked, proves a
 *      cap of that size. Escalation alone cannot see a cap it never reaches.
 *    - a 400 on a large limit steps the limit down (the server has a maximum) and is remembered.
 * 3. A request that stays cut is read in time slices (day-slices.ts) unless the run found the
 *    server not honouring instants; there, a request over several server days is split in halves,
 *    so neighbours cannot crowd the day out.
 * 4. A day still cut (no slices, or a slice that stays cut) is flagged truncated, loaded as far as
 *    it came.
 */

/** Evidence only narrows or widens a bounded number of times; more rounds means a bug. */
const MAX_ROUNDS = 32;
/**
 * How far a cap check widens the request, in days on each side. A week at once: its answer (more
 * items than any one day) sets a floor that later days of the run rarely reach, so a run makes
 * about one check per resource on a server without a cap.
 */
const CHECK_WIDENINGS = [7] as const;
/** The most days settled at a repeated size the run's end asks again (ceilingIsCap). */
const CEILING_ASKS = 4;
/** Requests per run and resource spent proving the server's day; on a UTC server one or two do. */
const MAX_PROOFS = 12;
/** Halvings of a cut request before the day is called truncated. */
const MAX_SPLIT_DEPTH = 4;

/** The state of one day's fetch: what it holds so far and the limit it asks with. Printable. */
export interface DayFetch {
  resource: WindowedResource;
  day: DayString;
  policy: LimitPolicy;
  /** Shared by the run's windows of this source and resource: what one learns serves the others. */
  knowledge: ResourceKnowledge;
  items: unknown[];
  /**
   * Identities of the items held. A larger limit or a wider request answers again much of what
   * came before (a cut day: 1,000, 4,000, then 10,000 items): an item an earlier answer held is
   * not held a second time.
   */
  kept: Set<string>;
  requests: number;
  /** Most items one response for this day returned. */
  servedCount: number;
  limit: number;
  /**
   * Answers to requests that served the whole day under the reading, as much of each as the slices
   * go by: a cut one is the first time slice's answer, already given (time-slices.ts,
   * slicesAfterDay). Not the answers themselves: each repeats up to the cap's items, held once in
   * `items`.
   */
  dayAnswers: DayAnswer[];
  /** A day not over yet (today): read again by every run, it settles nothing and proves nothing. */
  open: boolean;
  /**
   * The day was settled empty by an earlier run: its first request is the widest (emptyFirst),
   * which settles it alone if it is still empty, where the narrow request would need it too.
   */
  emptyBefore: boolean;
  /** Answers that held none of the day's items: one alone never settles it (underProof). */
  emptyAnswers: number;
  /** Times the day came back short of what an answer of the run held of it. */
  shortAnswers: number;
  /** Stale verdicts met while settling the day: past a few, the day is flagged (MAX_STALE). */
  staleVerdicts: number;
  /**
   * Times the server's maximum limit contradicted itself while settling the day: a limit taken at
   * or above one refused, or refused at or below one taken. Past one, the limit stops climbing
   * (MAX_MAXIMUM_TURNS).
   */
  maximumTurns: number;
  /**
   * Most items an answer held that settled the day without holding it: the wide answer an empty
   * day was settled on. A cap the run proves later at or below it means it may have been cut.
   */
  vouchedBy: number;
  /**
   * Most items an answer of the reading's check held, judged uncut when asked, while the day was
   * being settled: the day settles on the check's word that the reading holds. A cap the run
   * proves later at or below it means that answer may have been cut, and the check proved nothing.
   */
  checkedAt: number;
  /**
   * The size of the answer last judged whole for the day: below every cap the run knew when it was
   * judged (else it was judged cut). A cap proved later at that size, by another window perhaps
   * while this day's reading check was out, means it may have been cut.
   */
  wholeAt: number;
  /** That answer, by its first and last item (reading-session.ts, settledOn). */
  wholeOn: string | undefined;
  /** An answer for the day was judged cut and the day read as a cut one (readCut): not as whole. */
  readAsCut: boolean;
  /**
   * The largest answer of a cut day's halves or time slices judged whole: judged below the caps
   * known then, so a cap proved later (a deploy lowered it) may have cut it.
   */
  partsWholeAt: number;
  /**
   * A part of the cut day came back whole and held the day from midnight to midnight (spansDay):
   * the day is whole, whatever its other parts' cuts.
   */
  spannedWhole: boolean;
  /**
   * The day's UTC day, asked with instants (the stored reading's check, checkByInstants), came back
   * empty: under instants honoured, a second empty answer no reading of bounds or zone explains.
   */
  utcDayEmpty: boolean;
  /**
   * What the widest request, asked at the day's first empty answer (widestFirst), said of the day
   * when it did not settle it: it held the day's items, or it was cut before the day. Asked first,
   * for a day an earlier run settled empty (emptyFirst): 'holds' when it settled the day empty,
   * 'asked' when it said none of this (it stands for the day's first empty answer's). 'empty' when
   * it held no item at all: no cap cut it and no reading places the day's items outside it, so it
   * is the empty day's verdict (emptyVerdict) once a second answer is empty too.
   */
  widest: 'unasked' | 'asked' | 'empty' | 'stale' | 'cut' | 'holds';
  /** The cap check's wider answer that brought more than the day's: the reading's check may read it. */
  wider: { range: DayRange; answer: readonly unknown[] } | undefined;
  /**
   * The last answer as large as any before it (judged 'suspect') that the day asked again by a
   * narrower request before checking it: its range, size and items' identities (cappedAt).
   */
  suspectBefore: { range: DayRange; size: number; ids: ReadonlySet<string> } | undefined;
  /** The request of the round that settles the day (reading-session.ts, reopenUncovered). */
  asked: DayRange | undefined;
  /** Items without a readable dt a wider answer than the day's own held, not held from it (hold). */
  undatedLeft: Set<string>;
  /** An answer to the day's own request was held whole, its undated items with it. */
  ownHeld: boolean;
  /** Items earlier runs stored of the day (the ledger's item_count): see heldBefore. */
  itemsBefore: number;
  /** The run's readings learned anew (ResourceKnowledge.relearned) when the day's plan began. */
  relearnedBefore: number;
}

export type Saturation = 'complete' | 'limit' | 'cap' | 'suspect';

/**
 * Whether an answer of `count` items may have been cut: by our limit, by a proved cap, or by a
 * raised one not yet proved (atNewCap).
 */
function isCut(count: number, limit: number, reading: ServerReading): boolean {
  return count >= limit || atCap(reading, count) || atNewCap(reading, count);
}

/**
 * How an answer of `count` items stands: cut by our limit, by a proved cap, possibly by a cap not
 * yet seen (as long as any answer before it), or whole.
 */
export function judge(
  count: number,
  largestBefore: number,
  limit: number,
  reading: ServerReading,
): Saturation {
  if (count >= limit) return 'limit';
  if ((reading.cap !== null && count >= reading.cap) || atRaisedCap(reading, count)) return 'cap';
  // At a cap the run knows, forgotten with a stale reading: a wider request tells (cappedAt).
  return count > 0 && (count >= largestBefore || atCap(reading, count)) ? 'suspect' : 'complete';
}

export function newDayFetch(
  resource: WindowedResource,
  day: DayString,
  policy: LimitPolicy,
  knowledge: ResourceKnowledge,
  open = false,
  emptyBefore = false,
  /** Items earlier runs stored of the day (hintedStartLimit). */
  itemsBefore = 0,
): DayFetch {
  const limit = hintedStartLimit(itemsBefore, policy, knowledge);
  return {
    resource,
    day,
    policy,
    knowledge,
    items: [],
    kept: new Set(),
    requests: 0,
    servedCount: 0,
    limit,
    dayAnswers: [],
    open,
    emptyBefore,
    emptyAnswers: 0,
    shortAnswers: 0,
    staleVerdicts: 0,
    maximumTurns: 0,
    vouchedBy: 0,
    checkedAt: 0,
    wholeAt: 0,
    wholeOn: undefined,
    readAsCut: false,
    partsWholeAt: 0,
    spannedWhole: false,
    utcDayEmpty: false,
    widest: 'unasked',
    wider: undefined,
    suspectBefore: undefined,
    asked: undefined,
    undatedLeft: new Set(),
    ownHeld: false,
    itemsBefore,
    relearnedBefore: knowledge.relearned ?? 0,
  };
}

/**
 * The reading proved stale by what the plan's own answers could not show: another writer of the
 * run (a queued run's worker) found it stale, or the warehouse found a day's whole answer lacking
 * items another answer of the run served (src/sync/run-window.ts). It is learned again here, and
 * every day this writer settled since its last proof is reopened.
 */
export function staleElsewhere(knowledge: ResourceKnowledge): void {
  readingStale(knowledge);
  staleFound(sessionOf(knowledge));
}

/** The run's proofs of the reading (reading-session.ts), made on first use. */
export function sessionOf(knowledge: ResourceKnowledge): ReadingSession {
  knowledge.session ??= newSession();
  return knowledge.session;
}

/**
 * The day's plan: yields requests until the day is settled, then returns what it fetched. A day
 * flagged while the server changed how it answers (a stale verdict, a turn of its maximum limit,
 * the reading learned anew, by this day or another window) is read again: its answers say more of
 * the change than of the day, and under a steady reading it may read whole. The run's next pass
 * reads it (takeReopened), else the next run first (the ledger records it reopened).
 */
export function* planDay(state: DayFetch): Plan<FetchedDay> {
  const fetched = yield* settleDay(state);
  const changed =
    state.staleVerdicts > 0 ||
    state.maximumTurns > 0 ||
    (state.knowledge.relearned ?? 0) !== state.relearnedBefore;
  if (!fetched.truncated || state.open || !changed) return fetched;
  readAgain(sessionOf(state.knowledge), state.day);
  return { ...fetched, readAgain: true };
}

function* settleDay(state: DayFetch): Plan<FetchedDay> {
  const { reading } = state.knowledge;
  // Before any answer of the run: whether what it goes by was learned by an earlier run. One
  // another worker of this run stored is that run's evidence so far, proved by none of it yet.
  if (state.knowledge.storedReading === undefined) {
    state.knowledge.storedReading = reading.headMs !== null || reading.tailMs !== null;
    if (state.knowledge.storedReading && earlierRunsReading(reading))
      provedBefore(sessionOf(state.knowledge));
  }
  const first = yield* emptyFirst(state);
  if (first !== undefined) {
    const settledDay = yield* underProof(state, first);
    if (settledDay !== 'again') return yield* withUndated(state, settledDay);
  }
  for (let round = 0; round < MAX_ROUNDS; round++) {
    // A server that keeps changing (a rolling deploy) would keep the day asking: flagged instead.
    if (state.staleVerdicts >= MAX_STALE) return outcome(state, true);
    const range = runRequest(state.day, state.knowledge);
    state.asked = range;
    const played = yield* playRound(state, range);
    if (played === 'again') continue;
    const settledDay = yield* underProof(state, played);
    if (settledDay !== 'again') return yield* withUndated(state, settledDay);
  }
  throw new Error(
    `fetching ${state.resource} ${state.day} did not settle after ${MAX_ROUNDS} rounds (last asked ${state.asked?.startdate}..${state.asked?.enddate})`,
  );
}

/**
 * A day whose wider answers held items without a readable dt that none of its own requests held:
 * its own request is asked once more, which holds the day's (validation quarantines them). A day
 * settled on a wider answer (the reading narrowed while it was out, a check's) would otherwise
 * drop them, and a malformed item every answer of which was wider than its day's own be lost.
 */
function* withUndated(state: DayFetch, fetched: FetchedDay): Plan<FetchedDay> {
  const left = !state.ownHeld && [...state.undatedLeft].some((id) => !state.kept.has(id));
  state.undatedLeft.clear();
  if (!left) return fetched;
  yield* ask(state, requestFor(state.day, state.knowledge.reading));
  return { ...fetched, ...partitionByDay(state.items, state.day, true), requests: state.requests };
}

/** One round: ask `range`, then the day's outcome, or 'again' when a new request must be asked. */
function* playRound(state: DayFetch, range: DayRange): Plan<FetchedDay | 'again'> {
  const judged = yield* judgeAnswer(state, range);
  // The answer itself is let go of once judged: what the cut day's halves and slices ask next
  // goes by its items' times, and its new items are held in `items`.
  if (typeof judged !== 'object' || !('cutTimes' in judged)) return judged;
  state.readAsCut = true;
  return yield* readCut(state, range, judged.cutTimes);
}

/** An answer to the day's request that stays cut: the times of its items. */
interface CutAnswer {
  cutTimes: number[];
}

/** Asks `range` and judges its answer: the day's outcome, 'again', or a cut for readCut. */
function* judgeAnswer(state: DayFetch, range: DayRange): Plan<FetchedDay | 'again' | CutAnswer> {
  const { knowledge } = state;
  const { reading } = knowledge;
  const largestBefore = reading.largestResponse;
  const response = yield* served(state, range);
  const largest = largestToJudge(largestBefore, knowledge.reading);
  let saturation = judge(response.length, largest, state.limit, reading);
  if (saturation === 'complete') return yield* settleOrAgain(state, range, response);
  // A widest answer that may be cut ends quiet mode: the narrow requests take the cut over.
  if (knowledge.quiet === true && saturation !== 'suspect') return quietEnds(state);
  // The answer may be cut. If it proved something that moves the request, ask that first.
  if (!sameRange(range, runRequest(state.day, knowledge))) {
    if (saturation === 'suspect')
      state.suspectBefore = { range, size: response.length, ids: new Set(response.map(itemIdentity)) };
    return 'again';
  }
  if (saturation === 'suspect') {
    const verdict = yield* cappedAt(state, range, response);
    // A wider answer that brought more may come from a rolling deploy's new reading, this one at
    // the cap its old reading kept: cut all the same.
    if (verdict !== 'capped' && !atRaisedCap(reading, response.length)) {
      // Proved whole, it shows a zone's move it was too large to show (provedWhole).
      if (verdict === 'whole') provedWhole(knowledge.reading, range, response);
      // The check's own items may have moved the request: then the answer is not settled yet.
      if (!covers(range, runRequest(state.day, knowledge))) return 'again';
      // Whole for what was asked, as on the path above: the reading it was asked under is checked too.
      if (verdict === 'whole' || sameRange(range, runRequest(state.day, knowledge)))
        return yield* settleOrAgain(state, range, response);
      return 'again';
    }
    // A cap proved above this answer did not cut it: it is whole for what was asked.
    if (!isCut(response.length, state.limit, reading)) return yield* settleOrAgain(state, range, response);
    if (knowledge.quiet === true) return quietEnds(state);
    saturation = 'cap';
  }
  // Cut, but at an end that holds none of the day's items: as far as the reading tells, which a
  // reading an earlier run learned tells only once checked.
  if (cutSpares(reading, response, state.day)) {
    // Holding less of the day than an answer of the run did, it spared nothing: the day's items
    // fell outside what it served (an end bound turned exclusive answers a neighbour alone).
    if (shortOfSeen(sessionOf(knowledge), state.day, response)) return shortAnswer(state);
    if (!checkedByInstants(knowledge)) return outcome(state, false);
    return (yield* checkByInstants(checkInput(state, range, response))) ? 'again' : outcome(state, false);
  }
  const climbs = saturation === 'limit' && state.maximumTurns <= MAX_MAXIMUM_TURNS;
  const larger = climbs ? escalation(state.limit, state.policy, knowledge) : undefined;
  if (larger !== undefined) {
    if (larger.retriesRefused) knowledge.refusedRetried = true;
    state.limit = larger.limit;
    return 'again';
  }
  return { cutTimes: datedTimes(response) };
}

/**
 * A cut answer to the day's request `range`, `whole` its items' times: the day read in halves
 * and time slices, as far as they reach.
 */
function* readCut(state: DayFetch, range: DayRange, whole: readonly number[]): Plan<FetchedDay | 'again'> {
  const { knowledge } = state;
  const { reading } = knowledge;
  // Unless instants are known not honoured, slices read the day from this answer on, neighbours
  // left out: halving the request first would ask again what the slices ask (learning the bounds
  // cut answer by cut answer, a first day cost six times the ideal). Where the probe the slices
  // start with finds them not honoured, the halves are asked as before: a server that ignores
  // instants costs that one request a resource and run, the day staying cut or not.
  const slicedFirst = reading.instants !== 'ignored' && reading.instants !== 'refused';
  if (slicedFirst && (yield* sliced(state))) return outcome(state, false);
  const truncated = yield* split(state, range, 0, whole);
  if (truncated === 'stale') return stale(state);
  if (truncated === 'short') return shortAnswer(state);
  // Flagged: its halves prove nothing, and a server whose reading keeps changing (a rolling
  // deploy) answers a day asked anew under one of its readings as it answered these.
  if (truncated === 'relearned') return outcome(state, true);
  if (state.spannedWhole) return outcome(state, false);
  // The parts' items may have narrowed the request; ask that before calling the day cut. A
  // reading found changed meanwhile (the slices' probe) may no longer hold the day in `range`.
  const now = runRequest(state.day, knowledge);
  if ((truncated && !sameRange(range, now)) || !covers(range, now)) return 'again';
  return outcome(state, truncated && (slicedFirst || !(yield* sliced(state))));
}

/** Stale verdicts one day meets before it is flagged rather than asked again. */
const MAX_STALE = 4;
/**
 * Turns of the server's maximum limit one day meets before its limit stops climbing. A deploy that
 * raises or lowers the maximum turns it once; a rolling deploy, its old and new readings answering
 * in turn, turns it at every other answer: the search for the maximum between a limit taken and
 * one refused would never close, each step up refused by one reading and each step down taken by
 * the other. The day is read at the limit it has (cut there, as at any ceiling: halves, slices,
 * else flagged truncated).
 */
const MAX_MAXIMUM_TURNS = 1;
/** Short answers of one day before it is flagged rather than asked again (an item may have gone). */
const MAX_SHORT_ANSWERS = 2;

/**
 * A day the plan would settle, under the run's proofs (reading-session.ts): short of what an
 * answer of the run held of it, the reading is stale; empty of its own items, it is asked again
 * and the canary asked at once; settled, it waits for the next proof, which is made here when due.
 * A stale verdict learns the reading again and asks the day anew.
 */
function* underProof(state: DayFetch, fetched: FetchedDay): Plan<FetchedDay | 'again'> {
  if (fetched.truncated || state.open) return fetched;
  const { knowledge } = state;
  const session = sessionOf(knowledge);
  const held = fetched.onDay.filter((item) => itemDay(item) === state.day);
  if (session.lapsed) {
    session.lapsed = false;
    if (state.staleVerdicts < MAX_STALE - 1) return stale(state);
    // Still lapsing at the last verdict: what the day's answer holds is what a reading no longer
    // explained served (old readers keeping some requests), not a day to settle.
    return outcome(state, true);
  }
  if (shortOfSeen(session, state.day, held)) return shortAnswer(state);
  if (held.length > 0 && held.length < state.itemsBefore && !(yield* heldBefore(state, held)))
    return shortAnswer(state);
  if (held.length === 0 && knowledge.quiet !== true) {
    state.emptyAnswers += 1;
    if (state.emptyAnswers === 1) {
      // Its own answer, whole and empty, and its UTC day asked with instants (the stored reading's
      // check, or asked here), empty too: settled.
      const utcEmpty = yield* utcDayEmpty(state);
      if (utcEmpty === 'stale') return stale(state);
      if (!utcEmpty && (yield* widestFirst(state)) === 'again') return 'again';
    } else if (state.emptyAnswers === 2) {
      const verdict = state.widest === 'stale' ? 'stale' : yield* emptyVerdict(state);
      if (verdict === 'stale') return stale(state);
      if (verdict === 'unproven') return { ...fetched, truncated: true };
    }
  }
  // The answer the day was settled on as whole, or the wide one that vouched for it empty; read
  // as a cut day, the largest of its parts judged whole.
  const served = state.readAsCut ? state.partsWholeAt : Math.max(state.wholeAt, state.vouchedBy);
  // Settled on its own request's answer, not on the widest request's, which holds it under any reading.
  const asked = state.vouchedBy === 0 ? state.asked : undefined;
  const answers = {
    room: roomOf(state),
    served,
    readAsCut: state.readAsCut,
    checkedAt: state.checkedAt,
    alone: serverDay(knowledge.reading) === 'utc',
    // Settled on the answer judged whole, not on a wide one that vouched for it.
    ...(state.wholeAt >= state.vouchedBy && state.wholeOn !== undefined ? { answer: state.wholeOn } : {}),
    ...(asked === undefined
      ? {}
      : {
          under: {
            range: asked,
            relearned: knowledge.relearned ?? 0,
            reading: knowledge.reading,
            ...(state.readAsCut ? { parts: true } : {}),
          },
        }),
  };
  // A cap proved since a day settled at its size, or a reading that no longer holds a day in the
  // request it was settled under: that day is read again.
  reopenUncapped(session, (size) => atCap(knowledge.reading, size));
  reopenUncoveredDays(knowledge);
  // Read as a cut day whose parts all came back cut or empty: nothing a later cap could have cut.
  const whole = {
    ...(state.readAsCut && served === 0 ? fetched : { ...fetched, uncappedServed: served }),
    ...(asked === undefined ? {} : { settledUnder: asked }),
  };
  if (!settled(session, state.day, held, answers)) return whole;
  return (yield* proveReading(state)) === 'stale' ? stale(state) : whole;
}

/**
 * A day about to settle with fewer of its items than earlier runs stored of it: whether the items
 * it lacks went from the server, or the reading no longer serves the whole day. The run's answers
 * may not show the rest (a queued run's worker sees only its own windows, and the day's neighbours
 * may have gone to another), nor the stored reading's check (made once a run, perhaps before a
 * deploy). The widest request holds the day under every reading: whole (cappedAt: a week wider
 * each side brings more), larger than the day's own answers and holding no item of the day the
 * answer lacked, the items went (the store marks them absent). Otherwise the reading is stale, or
 * nothing proves it holds (a cap may cut the widest answer as it cut the day's): the day is short
 * (shortAnswer), asked anew under a reading learned again, and flagged if it is short so again,
 * never settled short.
 */
function* heldBefore(state: DayFetch, held: readonly unknown[]): Plan<boolean> {
  const widest = widestRequest(state.day);
  if (state.asked !== undefined && covers(state.asked, widest)) return true;
  const { reading } = state.knowledge;
  const largestBefore = reading.largestResponse;
  const wide = yield* ask(state, widest);
  const seen = new Set(held.map(itemIdentity));
  if (wide.some((item) => itemDay(item) === state.day && !seen.has(itemIdentity(item)))) return false;
  // No more than a narrower answer for the day served: a cap may cut both (a deploy lowered it).
  if (wide.length <= state.servedCount) return false;
  if (judge(wide.length, largestToJudge(largestBefore, reading), state.limit, reading) !== 'complete')
    return false;
  // Judged whole by the largest answer the run saw, which a cap lowered since (by the deploy that
  // moved a bound, say) does not bound: the cap check proves none cut it.
  return (yield* cappedAt(state, widest, wide)) === 'whole';
}

/**
 * Whether a day whose own answer was empty is empty in its UTC day asked with instants too: two
 * empty answers, the second one no reading of bounds or zone explains away. Where the stored
 * reading's check asked it already, free; where this run's probe proved instants honoured, one
 * request, as the widest request would be, and it is never cut by busy neighbours. Items of the
 * day there: the day's own request missed them, the reading is stale.
 */
function* utcDayEmpty(state: DayFetch): Plan<boolean | 'stale'> {
  const { knowledge } = state;
  if (knowledge.reading.instants !== 'honoured') return false;
  if (knowledge.storedReading === true || state.utcDayEmpty) return state.utcDayEmpty;
  if (knowledge.instantsProbed !== true) return false;
  const answer = yield* askInstants(state, sliceRequest(daySlice(state.day)));
  if (answer === 'refused') return false;
  if (answer.some((item) => itemDay(item) === state.day)) return 'stale';
  return state.utcDayEmpty;
}

/**
 * A day's first empty answer: the widest request (which holds the day under every reading)
 * settles it at once if its answer, in the server's order, runs from before the day to after it
 * with none of the day's items: a server that lists by dt serves every item between an answer's
 * first and last. One request rules out both a transient empty answer and a stale reading, where
 * asking the day again and then the canary took two. An answer with no item at all does too: no
 * cap cut it, no reading places the day outside it, and it is the day's second empty answer.
 * Otherwise ('again') the day is asked again, and what the answer said is its verdict's if one is
 * needed (emptyVerdict).
 */
function* widestFirst(state: DayFetch): Plan<'holds' | 'again'> {
  // Asked already (emptyFirst), and it settled the day, or came back empty.
  if (!widestSettles(state) && widestWorthAsking(state)) yield* askWidest(state);
  return widestSettles(state) ? 'holds' : 'again';
}

/** The widest answer settled the day, or came back empty: with the day's own, two empty answers. */
function widestSettles(state: DayFetch): boolean {
  return state.widest === 'holds' || state.widest === 'empty';
}

/**
 * Whether the widest request may settle the day empty: not asked yet, wider than what the run
 * asks for the day, and not holding neighbours seen to hold more than one answer would (it would
 * come back cut, settling nothing).
 */
function widestWorthAsking(state: DayFetch): boolean {
  const widest = widestRequest(state.day);
  if (state.widest !== 'unasked' || covers(runRequest(state.day, state.knowledge), widest)) return false;
  return seenIn(sessionOf(state.knowledge), widest) < roomOf(state);
}

/**
 * Asks the widest request for an empty day (see widestFirst): true when its answer settles the day
 * empty; otherwise what it said is kept for the day's verdict (emptyVerdict).
 */
function* askWidest(state: DayFetch): Plan<boolean> {
  const reading = { ...state.knowledge.reading };
  const wide = yield* ask(state, widestRequest(state.day));
  const verdict = wideVerdict(state, wide);
  if (verdict === 'holds' && answerSpans(reading, wide, state.day)) {
    state.widest = 'holds';
    return true;
  }
  // Uncut only as far as the run knows (a cap not yet proved): asked again for the verdict.
  state.widest = verdict !== 'holds' ? verdict : wide.length === 0 ? 'empty' : 'asked';
  return false;
}

/**
 * A day an earlier run settled empty: the widest request asked before the day's own. Still empty,
 * its answer settles the day alone, under the same test as an empty day's first empty answer
 * (widestFirst; the day's own request, empty too, would add nothing to it), and the day goes
 * under the run's proofs as any other. Otherwise undefined: the day is asked as any other, and
 * what the widest answer held of it its own answer must hold too (shortOfSeen).
 */
function* emptyFirst(state: DayFetch): Plan<FetchedDay | undefined> {
  const { knowledge } = state;
  if (!state.emptyBefore || state.open || knowledge.quiet === true) return undefined;
  // Only an answer listed by dt settles an empty day alone (answerSpans): where the server is not
  // known to list so, the widest request would come first for nothing.
  if (knowledge.reading.order !== 'oldest-first' && knowledge.reading.order !== 'newest-first')
    return undefined;
  if (!widestWorthAsking(state)) return undefined;
  if (yield* askWidest(state)) return outcome(state, false);
  // Empty, it is the day's first empty answer: the day's own, empty too, is its second.
  if (state.widest === 'empty') state.emptyAnswers = 1;
  return undefined;
}

/** Items the run has seen served of the days `range` spans (each day's largest answer). */
function seenIn(session: ReadingSession, range: DayRange): number {
  let seen = 0;
  for (let day = range.startdate; day <= range.enddate; day = addDays(day, 1))
    seen += session.seen.get(day)?.count ?? 0;
  return seen;
}

/** Most items one answer holds uncut: the day's limit, or a cap proved below it. */
function roomOf(state: DayFetch): number {
  const { cap } = state.knowledge.reading;
  return Math.min(state.limit, cap ?? state.limit);
}

/** What an answer to the widest request says of an empty day (see widestFirst). */
function wideVerdict(state: DayFetch, wide: readonly unknown[]): 'holds' | 'stale' | 'cut' {
  const { reading } = state.knowledge;
  if (wide.some((item) => itemDay(item) === state.day)) return 'stale';
  if (cutSpares(reading, wide, state.day)) return 'holds';
  if (isCut(wide.length, state.limit, reading)) return 'cut';
  // Uncut as far as the run knows: a cap learned in an earlier run may have been lowered since.
  state.vouchedBy = wide.length;
  return 'holds';
}

/**
 * A day empty twice under the reading: the canary says whether the reading still holds. Without
 * one, the request that holds the day under every reading does; cut by busy neighbours, the day
 * asked with instants from the last item held before it (which tells whether instants are
 * honoured); else the day is flagged, never settled empty on a reading nothing proved.
 * The edges never vouch for a day earlier runs stored items of: their two answers may come from
 * two readers of a rolling deploy.
 * On a run that saw two readings (readingDoubted), the canary and the edges vouch for nothing:
 * a rolling deploy's old readers may answer every request that starts on the day (a cache or a
 * balancer keyed by the address) and the new ones the rest, so only an answer from before the
 * day to after it, which holds the day under either reading, settles it empty.
 */
function* emptyVerdict(state: DayFetch): Plan<'holds' | 'stale' | 'unproven'> {
  // The widest request came back empty: the day held nothing under any reading then, and this
  // second empty answer says a transient empty answer did not make it so.
  if (state.widest === 'empty') return 'holds';
  const doubted = readingDoubted(state.knowledge);
  // A cut canary proves the server unchanged, not that the reading's request holds a day: only
  // the canary, a day held whole asked as the reading now asks it, vouches for the empty answers.
  const asked = proofCanary(sessionOf(state.knowledge));
  const verdict = yield* proveReading(state);
  if (verdict === 'stale') return verdict;
  if (!doubted && verdict === 'holds' && asked !== undefined && 'whole' in asked) return verdict;
  const widest = widestRequest(state.day);
  if (covers(runRequest(state.day, state.knowledge), widest)) return 'holds';
  // Asked when the day was first found empty: its answer was judged then.
  const judged =
    state.widest === 'unasked' || state.widest === 'asked'
      ? yield* widestVerdict(state, widest)
      : state.widest;
  if (judged !== 'cut') return judged;
  const { reading } = state.knowledge;
  // Where instants are honoured, their one request below proves the day: the edges' two need not.
  // A day earlier runs stored items of is not proved empty by them: a rolling deploy's readers may
  // answer the two (a neighbour's edge by the old reading, the day's spare by the new one, which no
  // longer holds the day), and the day would be settled with none of its items.
  if (reading.instants !== 'honoured' && !doubted && state.itemsBefore === 0) {
    const edges = yield* emptyByEdges(state);
    if (edges !== 'unproven') return edges;
  }
  // Instants cost a server that refuses or ignores them one request a run, no more (SPEC-GAPS):
  // the run's probe (day-slices.ts) or this check, whichever comes first, and the other waits.
  yield* verdictReached(state.knowledge, 'instants');
  const session = sessionOf(state.knowledge);
  if (reading.instants !== 'honoured' && (reading.instants !== null || session.instantAsks > 0))
    return 'unproven';
  session.instantAsks += 1;
  const slice = sliceToDayEnd(state);
  const alone = yield* askInstantsAlone(state, slice);
  if (alone === 'refused') return instantsNot(state, 'refused');
  if (alone.some((item) => itemDay(item) === state.day)) return 'stale';
  const cut = isCut(alone.length, state.limit, reading);
  const evidence = instantsVerdict({ slice, answer: alone, known: state.items, cut });
  if (evidence === 'ignored') return instantsNot(state, 'ignored');
  return evidence === 'honoured' ? 'holds' : 'unproven';
}

/**
 * Whether the run found this resource's reading stale, learned it anew, or holds answers of two
 * readings, before now.
 */
function readingDoubted(knowledge: ResourceKnowledge): boolean {
  const session = sessionOf(knowledge);
  return session.turbulent || session.mixed || (knowledge.relearned ?? 0) > 0;
}

/**
 * Asks the widest request and judges its answer for an empty day's verdict. One as large as any
 * answer before it may be a silent cap's cut (a cap an earlier run knew, the reading since changed):
 * it vouches for the day only once a wider request proves no cap cut it (cappedAt).
 */
function* widestVerdict(state: DayFetch, widest: DayRange): Plan<'holds' | 'stale' | 'cut'> {
  const { reading } = state.knowledge;
  const largestBefore = reading.largestResponse;
  const wide = yield* ask(state, widest);
  const verdict = wideVerdict(state, wide);
  if (verdict !== 'holds' || cutSpares(reading, wide, state.day)) return verdict;
  const largest = largestToJudge(largestBefore, state.knowledge.reading);
  if (judge(wide.length, largest, state.limit, reading) !== 'suspect') return verdict;
  return (yield* cappedAt(state, widest, wide)) === 'capped' ? 'cut' : verdict;
}

/** Items an edge proof asks for: enough to show an answer's order, never a day's worth to hold. */
const EDGE_LIMIT = 20;

/**
 * An empty day between busy neighbours on a server that lists by dt (server-reading.ts,
 * edgeRequests): the neighbour's request shows the server still starts (or ends) where the
 * reading says, and the day asked with that neighbour comes back with the neighbour's items
 * first. Two small requests; judged under the reading they were asked by, whatever another
 * window learns meanwhile. A server flapping between two readings may answer them from two, as it
 * may a canary.
 */
function* emptyByEdges(state: DayFetch): Plan<'holds' | 'stale' | 'unproven'> {
  const reading = { ...state.knowledge.reading };
  const asks = edgeRequests(
    state.day,
    reading,
    edgeDayOf(sessionOf(state.knowledge), state.day, reading.order),
  );
  if (asks === undefined) return 'unproven';
  if (!edgeHolds(reading, asks.edge, yield* askFew(state, asks.edge))) return 'unproven';
  const spare = yield* askFew(state, asks.spare);
  if (spare.some((item) => itemDay(item) === state.day)) return 'stale';
  return cutSpares(reading, spare, state.day) ? 'holds' : 'unproven';
}

/** Asks `range` for a few items: what they show counts, not what they hold (an edge proof). */
function* askFew(state: DayFetch, range: DayRange): Plan<unknown[]> {
  const { knowledge } = state;
  state.requests += 1;
  const answer = yield { kind: 'ask', range, limit: Math.min(EDGE_LIMIT, state.limit) };
  if (answer.kind !== 'items')
    throw answer.kind === 'failed' ? answer.error : new Error('a request was answered with a wait');
  hold(state, answer.items, false);
  learnAnswer(knowledge, answer.items, range, Math.min(EDGE_LIMIT, state.limit));
  return answer.items;
}

/** The empty day's check asked with instants, as the run's one ask while they are not known honoured. */
function* askInstantsAlone(state: DayFetch, slice: Slice): Plan<unknown[] | 'refused'> {
  const honoured = state.knowledge.reading.instants === 'honoured';
  const release = honoured ? () => {} : claimVerdict(state.knowledge, 'instants');
  try {
    return yield* askInstants(state, sliceRequest(slice));
  } finally {
    release();
  }
}

/**
 * Instants proved not honoured by an empty day's check: the run's probe is made (day-slices.ts);
 * where a reading an earlier run learned said honoured, the reading changed and is learned again.
 */
function instantsNot(state: DayFetch, instants: 'refused' | 'ignored'): 'unproven' {
  const { knowledge } = state;
  knowledge.instantsProbed = true;
  if (knowledge.reading.instants === 'honoured' && knowledge.storedReading === true)
    readingChanged(knowledge, instants);
  else knowledge.reading.instants = instants;
  return 'unproven';
}

/**
 * A slice holding the day and, where the plan holds one, an item next to it: from the last item
 * held before the day, else the day's midnight, to just past the first held after it, else the
 * day's end. A known item inside tells whether instants are honoured.
 */
function sliceToDayEnd(state: DayFetch): Slice {
  const day = daySlice(state.day);
  let before = Number.NEGATIVE_INFINITY;
  let after = Number.POSITIVE_INFINITY;
  for (const item of state.items) {
    const time = itemTime(item);
    if (time === undefined) continue;
    if (time < day.startMs && time > before) before = time;
    if (time >= day.endMs && time < after) after = time;
  }
  if (before > Number.NEGATIVE_INFINITY) return { startMs: before, endMs: day.endMs };
  return { startMs: day.startMs, endMs: after < Number.POSITIVE_INFINITY ? after + 1 : day.endMs };
}

/**
 * A cut answer to a request holding the day, as a cut canary (reading-session.ts, CutCanary): listed
 * in the order the reading knows, its latest item on the day (newest first its first item, oldest
 * first its last); else undefined.
 */
function canaryOf(state: DayFetch, range: DayRange, answer: DayAnswer): CutCanary | undefined {
  const { order } = state.knowledge.reading;
  if (answer.served !== order) return undefined;
  const end = order === 'newest-first' ? answer.first : order === 'oldest-first' ? answer.last : undefined;
  if (end === undefined || dayOfTime(end) !== state.day) return undefined;
  return { day: state.day, range, count: answer.count, first: answer.first, last: answer.last };
}

/** Asks the run's canary under the reading as it stands. */
function proveReading(state: DayFetch): Plan<ProofVerdict | 'no canary'> {
  const { knowledge } = state;
  const proof = proofAsks(state);
  return proveOnce(sessionOf(knowledge), () => knowledge.reading, proof.ask, proof.cut);
}

/**
 * A proof's request and its judge of a cut answer, at the proof's own limit (proofLimit): each
 * request's limit, taken as it is asked, judges its answer.
 */
function proofAsks(state: DayFetch) {
  const session = sessionOf(state.knowledge);
  let limit = state.limit;
  return {
    ask: (range: DayRange) => {
      limit = proofLimit(session, state.limit);
      return ask(state, range, limit);
    },
    cut: (count: number) => isCut(count, limit, state.knowledge.reading),
  };
}

/**
 * What every answer teaches the run: one more response, what it held of each day (the session),
 * the reading (its bounds too when `range`, a request by days, was asked), and whether the server
 * now lists its answers otherwise than it did this run (sorted by dt, now shuffled, or the
 * reverse), or its bounds' evidence holds two readings (mixedReadings): a server that changed how
 * it reads, a rolling deploy perhaps, so the next day the run would settle is not, and the reading
 * is learned again first (underProof). `limit`: the
 * request's, where it tells whether the answer may be cut. Returns the items' times, read once
 * for every use of the answer.
 */
function learnAnswer(
  knowledge: ResourceKnowledge,
  items: readonly unknown[],
  range?: DayRange,
  limit?: number,
): (number | undefined)[] {
  knowledge.responses = (knowledge.responses ?? 0) + 1;
  const session = sessionOf(knowledge);
  const times = items.map(itemTime);
  const cut = limit === undefined ? undefined : isCut(items.length, limit, knowledge.reading);
  const { reading } = knowledge;
  if (
    range !== undefined &&
    lacksSeen(session, range, times, servesWhole(reading, range, answerShape(times), cut === false))
  )
    session.lapsed = true;
  noteAnswer(session, items, times);
  if (range === undefined) learnFromAnswer(knowledge.reading, items, times.filter(isTime));
  else {
    // Cut sooner than before, the size is one the server's cap may now cut at: days settled at it
    // are read again at the run's end (reopenUncapped), answers of it are taken as cut. Not when
    // our own limit cut it (a few items asked to prove a day empty): no cap is needed to explain it.
    const atOurLimit = limit !== undefined && items.length >= limit;
    if (!atOurLimit && cutSooner(session, range, times)) suspectCap(reading, items.length);
    learnFromResponse(knowledge.reading, range, items, atOurLimit ? 'limit' : cut, times);
    keepAnswer(session, { range, times, belowCaps: cut === false });
  }
  if (listingChanged(knowledge.reading) || mixedReadings(knowledge.reading)) session.lapsed = true;
  // What the run learned since may show an answer before came from another reading.
  if (!session.mixed) session.mixed = mixedAnswers(session, keptHolds(knowledge));
  return times;
}

/** Where an answer the run kept holds every item, as the reading says now (servesWhole). */
function keptHolds(knowledge: ResourceKnowledge): (kept: KeptAnswer) => (time: number) => boolean {
  return (kept) => servesWhole(knowledge.reading, kept.range, kept, kept.belowCaps);
}

/**
 * Where an answer to `range` holds every item, as the reading says: all the request serves where
 * it is below our limit and any cap proved, and smaller than an answer before it (one as large
 * may be cut by a cap not proved yet); where it may be cut, listed by dt, the side its order
 * keeps: before its last item (oldest first), or after it (newest first, its last is its oldest).
 */
function servesWhole(
  reading: ServerReading,
  range: DayRange,
  { count, last }: { count: number; last: number | undefined },
  belowCaps: boolean,
): (time: number) => boolean {
  const held = (time: number) => heldWhole(range, reading, time);
  if (belowCaps && count < reading.largestResponse) return held;
  // Listed by dt, its last item is the one nearest the side a cut dropped.
  if (last === undefined) return () => false;
  if (reading.order === 'oldest-first') return (time) => time < last && held(time);
  if (reading.order === 'newest-first') return (time) => time > last && held(time);
  return () => false;
}

/** What servesWhole reads of an answer's times. */
function answerShape(times: readonly (number | undefined)[]): { count: number; last: number | undefined } {
  return { count: times.length, last: times.at(-1) };
}

/** The reading proved stale: learned again from nothing; the day is asked anew, not reopened. */
function stale(state: DayFetch): 'again' {
  state.staleVerdicts += 1;
  readingStale(state.knowledge);
  staleFound(sessionOf(state.knowledge), state.day);
  state.emptyAnswers = 0;
  state.widest = 'unasked';
  state.wider = undefined;
  state.suspectBefore = undefined;
  return 'again';
}

/**
 * The run's last proof of a resource's reading, once its windows are read (reading-session.ts,
 * proveRun): the days it reopens. A stale verdict learns the reading again, as a day's would.
 */
export function* planRunProof(
  resource: WindowedResource,
  policy: LimitPolicy,
  knowledge: ResourceKnowledge,
  today: DayString,
): Plan<DayString[]> {
  const session = sessionOf(knowledge);
  // Each answer is noted (learnAnswer): one holding more of the day before than it held reopens it.
  // Side by side, as the run's windows, the ceiling's checks with them: no answer of one decides
  // what another asks, and one after the other they were the run's end's longest wait.
  const after = daysAfterStretches(session, today).map((next) =>
    dayAfter(resource, next, policy, knowledge, today),
  );
  const parts = [...ceilingChecks(resource, policy, knowledge), ...after];
  if (parts.length > 0) yield { kind: 'all', plans: parts };
  // A day settled on an answer that lacks what these showed of a day it served whole is read again.
  reopenMixed(session, keptHolds(knowledge));
  // An answer of these lacked what the run's answers showed of a day it serves whole: a failed
  // proof, whatever the canary says (old readers may keep the canary's own request).
  if (session.lapsed) {
    proofAnswered(session, [], 'stale');
    readingStale(knowledge);
  }
  const reopenAtCaps = () => reopenUncapped(session, (served) => atCap(knowledge.reading, served));
  const day = canaryDay(session);
  if (day === undefined) {
    reopenAtCaps();
    reopenUncoveredDays(knowledge, true);
    return takeReopened(session);
  }
  const state = newDayFetch(resource, day, policy, knowledge);
  const failedBefore = session.proofs.failed;
  const proof = proofAsks(state);
  const reopened = yield* proveRun(session, () => knowledge.reading, proof.ask, proof.cut);
  if (session.proofs.failed > failedBefore) readingStale(knowledge);
  // Once, after the proof: its own answer may prove a cap (a size seen cut twice) beside the
  // ceiling check's, and a stale verdict forgets the reading's cap but not the caps proved.
  reopenAtCaps();
  reopenUncoveredDays(knowledge, true);
  return [...new Set([...reopened, ...takeReopened(session)])].sort();
}

/** The run's end asks `next`, the day after a stretch, as its own window would. */
function* dayAfter(
  resource: WindowedResource,
  next: DayString,
  policy: LimitPolicy,
  knowledge: ResourceKnowledge,
  today: DayString,
): Plan<unknown[]> {
  const state = newDayFetch(resource, next, policy, knowledge, next === today);
  return yield* forDay(next, ask(state, requestFor(next, knowledge.reading)));
}

/** A plan's requests, named for `day`: the run's end asks for days other than the canary's. */
function* forDay<T>(day: DayString, plan: Plan<T>): Plan<T> {
  let step = plan.next();
  while (!step.done) {
    const answer = yield step.value.kind === 'ask' ? { ...step.value, day } : step.value;
    step = plan.next(answer);
  }
  return step.value;
}

/**
 * Days settled under a request the reading, as it stands, says misses part of them: read again.
 * At the run's end (`final`), those settled under the reading's earlier generations too.
 */
function reopenUncoveredDays(knowledge: ResourceKnowledge, final = false): void {
  const { reading } = knowledge;
  reopenUncovered(sessionOf(knowledge), holdsDayRequest(reading), {
    relearned: knowledge.relearned ?? 0,
    reading,
    final,
    evidence: hasEvidence(reading),
  });
}

/**
 * The days a queued run settled, on the requests the ledger recorded, judged at its end as the
 * days of the reading's earlier generations are (reopenUncoveredDays, `final`): by whatever
 * reading a worker held then, none of them is this one.
 */
export function reopenUncoveredSettled(
  knowledge: ResourceKnowledge,
  settledOn: readonly { day: DayString; range: DayRange; parts?: boolean }[],
): void {
  const { settledBy } = sessionOf(knowledge);
  const ledger = { relearned: -1, reading: {} };
  for (const { day, range, parts } of settledOn)
    settledBy.set(day, { range, ...ledger, ...(parts === true ? { parts } : {}) });
  reopenUncoveredDays(knowledge, true);
}

/** The run end's checks of the sizes days settled at (checkCeiling), one plan a size. */
function ceilingChecks(
  resource: WindowedResource,
  policy: LimitPolicy,
  knowledge: ResourceKnowledge,
): Plan<void>[] {
  const session = sessionOf(knowledge);
  const limit = startLimit(policy, knowledge);
  const ceiling = ceilingOf(session, limit);
  const flapping = flappingCeilingOf(session, limit, ceiling);
  // Three sizes, each its own check: side by side, as a cap proved of one is no news of another.
  return [ceiling, flapping, shapedCeilingOf(session, limit, [ceiling, flapping])]
    .filter((check): check is CeilingCheck => check !== undefined && !atCap(knowledge.reading, check.size))
    .map((check) => checkCeiling(resource, policy, knowledge, check));
}

/**
 * Days settled at one size again and again, none larger since (reading-session.ts, ceilingOf):
 * one request around the first of them tells whether that size is a cap lowered during the run.
 * An answer of exactly that size with items of other days is one: the day alone held as many.
 * The size is then one answers may have been cut at: the days settled at it are read again.
 */
function* checkCeiling(
  resource: WindowedResource,
  policy: LimitPolicy,
  knowledge: ResourceKnowledge,
  check: CeilingCheck,
): Plan<void> {
  const others = [...sessionOf(knowledge).uncapped].filter(
    ([day, size]) => size === check.size && day !== check.day,
  );
  const days = [check.day, ...others.map(([day]) => day)];
  if (yield* ceilingIsCap(resource, policy, knowledge, check.size, days))
    suspectCap(knowledge.reading, check.size);
}

/**
 * Whether a size days settled at again and again is a cap: a day settled at it, asked again, holds
 * more of it than it settled with (a rolling deploy's old reading answered), or a request a week
 * wider on each side of the first (as the cap check's) is cut at that size too, with other days'
 * items (the answer it settled on may have been wider than the day's own). A day wider was too
 * narrow: on a steady server of a few items a day, three days' items made the size by chance.
 * While a rolling deploy still answers both readings, each request goes to either: the other days
 * at the size are asked again too (at most CEILING_ASKS in all), each one more chance to meet the
 * old reading's whole day. A steady server pays one request for each such day. A day asked again
 * that comes back alone with fewer of its items than an answer of the run held was cut now, at
 * that size.
 */
function* ceilingIsCap(
  resource: WindowedResource,
  policy: LimitPolicy,
  knowledge: ResourceKnowledge,
  size: number,
  days: readonly DayString[],
): Plan<boolean> {
  const first = days[0] as DayString;
  const ofDay = (day: DayString, answer: readonly unknown[]) =>
    answer.filter((item) => itemDay(item) === day).length;
  const provesCap = (answer: readonly unknown[]) =>
    (answer.length === size && ofDay(first, answer) < answer.length) || ofDay(first, answer) > size;
  // The days side by side, the first one's wider request with them: a steady server is asked each
  // of them anyway, and the verdict reads their answers in order, as one after another would.
  const asked = days
    .slice(0, CEILING_ASKS)
    .map((day) => ({ day, again: [] as unknown[], wide: [] as unknown[] }));
  const lean = leanCeilingRequest(knowledge, first, size);
  const askInto = function* (read: (typeof asked)[number], widen: boolean): Plan<void> {
    const own = requestFor(read.day, knowledge.reading);
    const state = newDayFetch(resource, read.day, policy, knowledge);
    if (!widen) read.again = yield* ask(state, own);
    else if (lean !== undefined) read.wide = yield* ask(state, lean.range, lean.limit);
    else read.wide = yield* ask(state, widened(own, CHECK_WIDENINGS[0]));
  };
  const plans = asked.map((read) => askInto(read, false));
  yield { kind: 'all', plans: [...plans, askInto(asked[0] as (typeof asked)[number], true)] };
  let cutAbove = false;
  for (const [i, { day, again, wide }] of asked.entries()) {
    if (ofDay(day, again) > size) return true;
    // The day alone, holding fewer of it than an answer of the run held: cut at that size now (a
    // new reading's lower cap), which any day settled at exactly that size may have been too.
    const held = sessionOf(knowledge).seen.get(day)?.count ?? 0;
    if (again.length > 0 && ofDay(day, again) === again.length && again.length < held)
      suspectCap(knowledge.reading, again.length);
    if (i > 0) continue;
    if (provesCap(wide)) return true;
    // Listed from beside the day into it, one item above the size: cut at the size, it was cut
    // below the items the run saw there; one item more, it held the day whole.
    if (lean !== undefined) {
      if (wide.length === size) return true;
      continue;
    }
    // Cut above the size before it reached the day: it let more through, but from where it starts
    // (old readers keeping the requests that start on one day answer with their larger cap).
    cutAbove = wide.length > size && ofDay(day, wide) < held;
  }
  if (!cutAbove) return false;
  // Asked last, so that a rolling deploy's days asked again keep their chances: a request starting
  // on the first day itself, a week long, is cut at the size too if that is a cap.
  const own = requestFor(first, knowledge.reading);
  const state = newDayFetch(resource, first, policy, knowledge);
  return provesCap(
    yield* ask(state, { startdate: own.startdate, enddate: widened(own, CHECK_WIDENINGS[0]).enddate }),
  );
}

/**
 * The ceiling check's wider request on a server listing by dt, and its limit: the day's own request
 * widened a week on the side its listing ends, asked for the items the run saw before the day in
 * that listing, the size and one item more. The size is an answer's (a quiet day's may be its
 * five-day request's), so the day holds no more: a cap at the size cuts the request at the size;
 * else it holds the whole day and an item beyond, where the week on both sides at the day's limit
 * answered up to the limit (a busy site's 10,000 items, each resource's at once at the run's end)
 * and, not reaching the day, asked again from it. None where the order is not known, or where the
 * run saw no more items in the range than the size: an answer at the size would be all of them.
 */
export function leanCeilingRequest(
  knowledge: ResourceKnowledge,
  day: DayString,
  size: number,
): { range: DayRange; limit: number } | undefined {
  const { reading } = knowledge;
  if (reading.order !== 'oldest-first' && reading.order !== 'newest-first') return undefined;
  const oldestFirst = reading.order === 'oldest-first';
  const own = requestFor(day, reading);
  const wide = widened(own, CHECK_WIDENINGS[0]);
  const range = oldestFirst
    ? { startdate: own.startdate, enddate: wide.enddate }
    : { startdate: wide.startdate, enddate: own.enddate };
  const session = sessionOf(knowledge);
  if (seenIn(session, range) <= size) return undefined;
  // What the listing passes before it reaches the day: its own request's days on that side.
  const lead = oldestFirst
    ? { startdate: range.startdate, enddate: addDays(day, -1) }
    : { startdate: addDays(day, 1), enddate: range.enddate };
  return { range, limit: seenIn(session, lead) + size + 1 };
}

function quietEnds(state: DayFetch): 'again' {
  endQuiet(state.knowledge);
  return 'again';
}

/** Whether time slices read the cut day whole. */
function sliced(state: DayFetch): Plan<boolean> {
  return readInSlices({
    day: state.day,
    knowledge: state.knowledge,
    held: () => state.items,
    dayAnswers: () => state.dayAnswers,
    ask: (range) => askInstants(state, range),
    cut: (count) => partCut(state, count),
  });
}

/** Whether a cut day's half or slice answered `count` items may be cut; if not, its size is noted. */
function partCut(state: DayFetch, count: number): boolean {
  const cut = isCut(count, state.limit, state.knowledge.reading);
  if (!cut) state.partsWholeAt = Math.max(state.partsWholeAt, count);
  return cut;
}

/** A whole answer: the day's outcome if it settles the day, else 'again'. */
function* settleOrAgain(
  state: DayFetch,
  range: DayRange,
  answer: readonly unknown[],
): Plan<FetchedDay | 'again'> {
  // Whole, yet holding less of the day than an answer of the run held (a request for it answered
  // at our limit, then empty, as a bound turned exclusive): the items held from that answer must
  // not settle the day on this one.
  const ownWhole = covers(range, requestFor(state.day, state.knowledge.reading));
  if (ownWhole && shortOfSeen(sessionOf(state.knowledge), state.day, answer)) return shortAnswer(state);
  state.wholeAt = answer.length;
  state.wholeOn =
    answer.length === 0 ? undefined : `${itemIdentity(answer[0])} ${itemIdentity(answer.at(-1))}`;
  return (yield* settles(state, range, answer)) ? outcome(state, false) : 'again';
}

/**
 * The day came back short of what the run saw of it, or of what earlier runs stored (heldBefore):
 * asked again, flagged if it stays short.
 */
function shortAnswer(state: DayFetch): FetchedDay | 'again' {
  state.shortAnswers += 1;
  // Asked again under a reading learned afresh and still short: flagged, never settled short.
  if (state.shortAnswers >= MAX_SHORT_ANSWERS) return outcome(state, true);
  return stale(state);
}

/**
 * A whole answer settles the day when the day reaches no further than what was asked, under the
 * reading as it now stands, and the reading it was asked under still holds.
 */
function* settles(state: DayFetch, range: DayRange, answer: readonly unknown[]): Plan<boolean> {
  if (!covers(range, requestFor(state.day, state.knowledge.reading))) return false;
  // Checked on an empty day too, though it tells nothing of that day: what the check learns of
  // the reading serves the run's other days. On a quiet source most days are empty, and a zone a
  // rolling deploy moved is seen only by these checks.
  const relearned = state.knowledge.relearned;
  // A check of a reading earlier runs stored (the run's, or a trusting writer's question whether
  // the source is quiet): the day settles on its word. A reading learned this run has nothing
  // stored to check, and its days settle on their own answers.
  const checking = earlierRunsReading(state.knowledge.reading);
  const stale = yield* staleReading(checkInput(state, range, answer, checking));
  // Found stale by this check, the reading had served the days settled since the last proof too:
  // they are read again, as a failed proof would have them.
  if (stale && state.knowledge.relearned !== relearned) staleFound(sessionOf(state.knowledge), state.day);
  return !stale;
}

/** What the reading's check works with: the day's answer to `range` and the plan's ways to ask. */
function checkInput(
  state: DayFetch,
  range: DayRange,
  answer: readonly unknown[],
  /** The day settles on the check's word: its answers count against a cap proved later (askForCheck). */
  vouching = false,
): ReadingCheckInput {
  return {
    day: state.day,
    knowledge: state.knowledge,
    range,
    answer,
    ask: (wide) => (vouching ? askForCheck(state, wide) : ask(state, wide)),
    askInstants: (instants) => askInstants(state, instants),
    held: () => state.items,
    cut: (count) => isCut(count, state.limit, state.knowledge.reading),
    quiet: (count) => quietAnswer(count, state.limit, state.knowledge.reading),
    asked: state.wider,
  };
}

/** Asks `range` for the reading's check; an answer judged uncut counts against a cap proved later. */
function* askForCheck(state: DayFetch, range: DayRange): Plan<unknown[]> {
  const answer = yield* ask(state, range);
  if (!isCut(answer.length, state.limit, state.knowledge.reading))
    state.checkedAt = Math.max(state.checkedAt, answer.length);
  return answer;
}

function outcome(state: DayFetch, truncated: boolean): FetchedDay {
  return {
    ...partitionByDay(state.items, state.day, state.requests > 1),
    requestedLimit: state.limit,
    servedCount: state.servedCount,
    truncated,
    requests: state.requests,
  };
}

/** Asks `range` for the day itself: counts its size, then spends what proofs its items allow. */
function* served(state: DayFetch, range: DayRange): Plan<unknown[]> {
  const response = yield* ask(state, range);
  state.servedCount = Math.max(state.servedCount, response.length);
  yield* prove(state);
  return response;
}

/**
 * Asks `range` until answered, stepping the limit down on a 400 (above the server's maximum);
 * holds the answer's new items and learns from it.
 */
function* ask(state: DayFetch, range: DayRange, asked?: number): Plan<unknown[]> {
  const { knowledge } = state;
  const { reading } = knowledge;
  // Decided when asked: another window may narrow the reading while this request is out.
  const ownRequest = covers(requestFor(state.day, reading), range);
  const holdsDay = covers(range, requestFor(state.day, reading));
  for (;;) {
    state.requests += 1;
    // A proof's own limit (proofLimit), never above the day's: a step down lowers both.
    const limit = Math.min(asked ?? state.limit, state.limit);
    const answer = yield { kind: 'ask', range, limit };
    if (answer.kind === 'items') {
      const { items } = answer;
      if (reading.limitRefused !== null && limit > (knowledge.limitAccepted ?? 0))
        knowledge.limitAccepted = limit;
      if (reading.limitRefused !== null && limit >= reading.limitRefused) {
        reading.limitRefused = null;
        state.maximumTurns += 1;
      }
      hold(state, items, ownRequest);
      if (ownRequest && holdsDay) {
        state.ownHeld = true;
        sessionOf(knowledge).ownAsked.add(state.day);
      }
      // The same size seen cut twice is a cap, proved below any the reading had: a deploy lowered it.
      if (holdsDay && noteCut(sessionOf(knowledge), state.day, items, limit) && !atCap(reading, items.length))
        proveCap(reading, items.length);
      const times = learnAnswer(knowledge, items, range, limit);
      // Checked once the answer is learned from: the evidence only ever narrows the day's request.
      if (covers(range, requestFor(state.day, reading))) {
        const answered = dayAnswerOf(state.day, items, times);
        state.dayAnswers.push(answered);
        // The run's first cut answer fit to be its cut canary, a day truncated or not (a capped
        // source's days above the cap are all truncated where instants are not honoured).
        const canary = !state.open && isCut(items.length, limit, reading) && canaryOf(state, range, answered);
        if (canary) offerCutCanary(sessionOf(knowledge), canary);
      }
      return items;
    }
    const error = answer.kind === 'failed' ? answer.error : new Error('a request was answered with a wait');
    if (!(error instanceof ApiError) || error.context.status !== 400 || state.limit <= 1) throw error;
    // Above the server's maximum: step down, never below a limit it took. A limit it took before
    // and refuses now was taken under a higher maximum (a deploy lowered it): it no longer counts,
    // or the plan would climb back to it after every step down.
    if ((knowledge.limitAccepted ?? 0) >= state.limit) {
      delete knowledge.limitAccepted;
      state.maximumTurns += 1;
    }
    reading.limitRefused = Math.min(reading.limitRefused ?? state.limit, state.limit);
    state.limit = stepDown(state.limit, knowledge);
  }
}

/**
 * Asks a time slice at the day's limit (one the server answered). A 400 here refuses the instants,
 * not the limit; an answer's bounds say nothing of the day's bounds, only its order and size count.
 */
function* askInstants(state: DayFetch, range: InstantRange): Plan<unknown[] | 'refused'> {
  const { knowledge } = state;
  state.requests += 1;
  const answer = yield { kind: 'ask', range, limit: state.limit };
  if (answer.kind === 'items') {
    hold(state, answer.items);
    learnAnswer(knowledge, answer.items);
    if (answer.items.length === 0 && sameRange(range, sliceRequest(daySlice(state.day))))
      state.utcDayEmpty = true;
    return answer.items;
  }
  const error = answer.kind === 'failed' ? answer.error : new Error('a request was answered with a wait');
  if (error instanceof ApiError && error.context.status === 400) return 'refused';
  throw error;
}

/**
 * Holds an answer's new items. One without a readable dt is held only from a request no wider
 * than the day's own under the reading: a wider one (quiet mode's, the check's, a proof's) spans
 * other days, whose undated items would count against this day's invalid share. The day's own
 * request holds its undated items (quiet mode asks it when a widest answer has any; withUndated
 * when the day settles without it).
 */
function hold(state: DayFetch, response: readonly unknown[], ownRequest = true): void {
  // A busy day's own answer is held as it is: only a wider one is copied, dropping what it held undated.
  const held = ownRequest ? response : response.filter((item) => datedOrNoted(state, item));
  const ids = held.map(itemIdentity);
  held.forEach((item, i) => {
    if (!state.kept.has(ids[i] as string)) state.items.push(item);
  });
  for (const id of ids) state.kept.add(id);
}

/** Whether a wider answer's item has a readable dt; one without is noted as left for the day's own request. */
function datedOrNoted(state: DayFetch, item: unknown): boolean {
  if (itemTime(item) !== undefined) return true;
  state.undatedLeft.add(itemIdentity(item));
  return false;
}

/** Spends a request to prove the server's day on a side, when an item near a midnight allows. */
function* prove(state: DayFetch): Plan<void> {
  const { knowledge } = state;
  for (const side of ['start', 'end'] as const) {
    if ((knowledge.proofs ?? 0) >= MAX_PROOFS) return;
    const range = proofRequest(knowledge.reading, side, state.items);
    if (range === undefined) continue;
    knowledge.proofs = (knowledge.proofs ?? 0) + 1;
    yield* ask(state, range);
  }
}

/**
 * Whether a response of `first` was cut by a silent cap (see step 2 above): 'whole' when a
 * wider request brought more, 'capped' when none brought more but one held other items,
 * 'unsure' when everything around the day is empty and nothing can tell.
 */
function* cappedAt(
  state: DayFetch,
  range: DayRange,
  first: readonly unknown[],
): Plan<'whole' | 'capped' | 'unsure'> {
  const { reading } = state.knowledge;
  const seen = new Set(first.map(itemIdentity));
  const holdsNew = (response: readonly unknown[]) => response.some((item) => !seen.has(itemIdentity(item)));
  // An answer of the same size to a request holding this one, with other items: a cut at that
  // size, proved by what the day was answered already. Asked only now, a week wider could come
  // from a deploy that raised the cap since, larger, and vouch for this answer.
  const before = state.suspectBefore;
  if (
    before !== undefined &&
    before.size === first.length &&
    covers(before.range, range) &&
    [...before.ids].some((id) => !seen.has(id))
  ) {
    proveCap(reading, first.length);
    return 'capped';
  }
  for (const widen of CHECK_WIDENINGS) {
    const wide = widened(range, widen);
    const wider = yield* ask(state, wide);
    if (wider.length > first.length) {
      state.wider = { range: wide, answer: wider };
      return 'whole';
    }
    if (holdsNew(wider)) {
      proveCap(reading, wider.length);
      return 'capped';
    }
  }
  // The widest answer held only the first one's items. An order that lists the day first
  // would hide its neighbours behind a cap: ask each side alone. Both sides lie inside the
  // widest request, so any item there that it lacked proves it was cut.
  const widest = CHECK_WIDENINGS[CHECK_WIDENINGS.length - 1] ?? 1;
  for (const side of [
    { startdate: addDays(range.startdate, -widest), enddate: addDays(range.startdate, -1) },
    { startdate: addDays(range.enddate, 1), enddate: addDays(range.enddate, widest) },
  ]) {
    if (holdsNew(yield* ask(state, side))) {
      proveCap(reading, first.length);
      return 'capped';
    }
  }
  return 'unsure';
}

/**
 * Asks each part of a cut request on its own, halving again while a part stays cut. `whole`: the
 * times of the items the request's own answer held. Of a part's answer only its times are kept
 * while its halves are asked: its new items are in `items`, and its repeats of earlier answers
 * (up to the cap's) are let go of, so the depth costs no answer more.
 */
function* split(
  state: DayFetch,
  range: DayRange,
  depth: number,
  whole: readonly number[] = [],
): Plan<boolean | 'stale' | 'short' | 'relearned'> {
  const { reading, relearned } = state.knowledge;
  const parts = halves(range, reading);
  if (parts === undefined || depth > MAX_SPLIT_DEPTH) return true;
  let truncated = false;
  // Every item the parts served, while none came back cut: together they hold all the whole held.
  const served = new Set<number>();
  let anyCut = false;
  for (const part of parts) {
    // A neighbour's items often sit near a midnight: they may prove the server's day, after
    // which the caller asks again without that neighbour.
    const answer = yield* partAnswer(state, part);
    if (answer.cut) anyCut = true;
    for (const time of answer.times) served.add(time);
    // Learned again meanwhile (a proof, or another window's check, found the reading stale): the
    // parts were cut out under a reading that no longer holds, and what they hold or lack proves
    // nothing (a start turned exclusive answers a one-day part empty, which the reading learned
    // afresh takes for a part that holds nothing of the day). The caller flags the day.
    if (state.knowledge.relearned !== relearned) return 'relearned';
    // A part that lacks what the whole served inside it, uncut, was not asked under the reading
    // the whole was: the server changed it (an end bound gone exclusive answers the part empty).
    if (!answer.cut && lacksServed(part, reading, whole, answer.times)) return 'stale';
    // Empty where the reading says it serves hours of the day, on a run that saw two readings:
    // no better proof than the day's own empty answer there (readingDoubted), since an old reader
    // may serve the part nothing (an end bound turned exclusive answers a one-day part empty).
    if (answer.empty && readingDoubted(state.knowledge) && servesPartOf(part, reading, state.day))
      return true;
    if (answer.cut && answer.sparesDay && answer.short) return 'short';
    // Whole from the day's first quarter hour to its last: no other part can hold more of it. A
    // busy day's neighbour cut at the cap, which no half spares where the reading doubts its day,
    // flagged a whole day beside it.
    if (answer.spansDay) {
      state.spannedWhole = true;
      return false;
    }
    if (!answer.cut || answer.sparesDay) continue;
    const deeper = yield* split(state, part, depth + 1, answer.times);
    if (typeof deeper === 'string') return deeper;
    if (deeper) truncated = true;
  }
  // The halves hold everything the range holds under every reading the evidence allows (halves):
  // uncut, and lacking an item the whole served, they were not served under any of them. A server
  // restarted with both bounds exclusive answers a one-day part empty, and the reading learned
  // from cut answers since says too little of its bounds for one part to show it (lacksServed).
  if (!anyCut && whole.some((time) => !served.has(time))) return 'stale';
  return truncated;
}

/** What split goes by of a part's answer. */
interface PartAnswer {
  cut: boolean;
  /** Nothing at all came back: not cut, and nothing of any day. */
  empty: boolean;
  /** Cut at an end that holds none of the day's items (cutSpares). */
  sparesDay: boolean;
  /**
   * Holding the day under the reading, yet less of it than an answer of the run did: where it is
   * cut and spares the day, the day's items fell outside what it served, and it spared nothing.
   */
  short: boolean;
  /** Judged whole as the day's own answer would be, holding the day midnight to midnight (spansDay). */
  spansDay: boolean;
  times: number[];
}

function* partAnswer(state: DayFetch, part: DayRange): Plan<PartAnswer> {
  const { reading } = state.knowledge;
  const largestBefore = reading.largestResponse;
  const response = yield* served(state, part);
  const cut = partCut(state, response.length);
  const times = datedTimes(response);
  const largest = largestToJudge(largestBefore, state.knowledge.reading);
  const shortOfRun = shortOfSeen(sessionOf(state.knowledge), state.day, response);
  return {
    cut,
    empty: response.length === 0,
    sparesDay: cutSpares(reading, response, state.day),
    short: covers(part, requestFor(state.day, reading)) && shortOfRun,
    spansDay:
      !cut &&
      judge(response.length, largest, state.limit, reading) === 'complete' &&
      spansDay(times, state.day) &&
      !shortOfRun,
    times,
  };
}

/** Whether an answer to `part`, its items at `answer`, lacks one of `whole` the reading says it holds. */
function lacksServed(
  part: DayRange,
  reading: ServerReading,
  whole: readonly number[],
  answer: readonly number[],
): boolean {
  const times = new Set(answer);
  return whole.some((time) => heldWhole(part, reading, time) && !times.has(time));
}

/** Splits items into the day's (or unplaceable) and other days', dropping verbatim repeats. */
function partitionByDay(
  items: readonly unknown[],
  day: DayString,
  mayRepeat = true,
): { onDay: unknown[]; otherDays: unknown[] } {
  const onDay: unknown[] = [];
  const otherDays: unknown[] = [];
  const seen = new Set<string>();
  for (const item of items) {
    if (mayRepeat) {
      const id = itemIdentity(item);
      if (seen.has(id)) continue;
      seen.add(id);
    }
    const itemDayString = itemDay(item);
    (itemDayString === undefined || itemDayString === day ? onDay : otherDays).push(item);
  }
  return { onDay, otherDays };
}

/**
 * Asks the canary and records the verdict on the days settled so far. `ask` sends a request the
 * way the day's plan does (items held, reading learned). Returns the verdict; on 'stale' the
 * caller learns the reading again (reading-check.ts, readingStale).
 */
function* proveOnce(
  session: ReadingSession,
  reading: () => ServerReading,
  ask: (range: DayRange) => Plan<unknown[]>,
  cut: (count: number) => boolean,
): Plan<ProofVerdict | 'no canary'> {
  const asked = proofCanary(session);
  if (asked === undefined) return 'no canary';
  const proving = startProof(session);
  let verdict: ProofVerdict;
  if ('whole' in asked) {
    const answer = yield* ask(requestFor(asked.whole.day, reading()));
    verdict = proofVerdict(asked.whole, answer, cut(answer.length));
  } else verdict = cutProofVerdict(asked.cut, yield* ask(asked.cut.range), cut);
  // After a stale verdict (a server that changed, perhaps still answering both ways), the canary
  // may have come from the new reading and the bounds from the old: the bound's item too.
  const bound = verdict === 'holds' && session.turbulent ? boundProof(reading()) : undefined;
  if (bound !== undefined) {
    proofAsksMore(session);
    if (boundStale(bound, yield* ask(bound.range))) verdict = 'stale';
  }
  proofAnswered(session, proving, verdict, 'whole' in asked ? 'whole' : 'cut');
  return verdict;
}

/**
 * The run's last proof, once its days are read: the days it reopens (the run reads them again).
 * After a stale verdict the reading must pass twice in a row, so it is asked up to three times.
 */
function* proveRun(
  session: ReadingSession,
  reading: () => ServerReading,
  ask: (range: DayRange) => Plan<unknown[]>,
  cut: (count: number) => boolean,
): Plan<DayString[]> {
  // A source proved by its cut canary settles few days (those above the cap are flagged), so few
  // proofs come before the run's end: there, as after a stale verdict, the days are proved only
  // by two in a row (a rolling deploy answers either reading, and one answer agrees by chance).
  const asked = proofCanary(session);
  if (asked !== undefined && 'cut' in asked) session.turbulent = true;
  for (let asks = 0; asks < 3 && session.unproved.length > 0; asks++) {
    const verdict = yield* proveOnce(session, reading, ask, cut);
    if (verdict !== 'holds') break;
  }
  return takeReopened(session);
}
