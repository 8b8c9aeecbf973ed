import { addDays, type DayString } from '../time/days.js';
import { itemIdentity } from './item-identity.js';
import { claimVerdict, type Plan, type ResourceKnowledge, verdictReached } from './plan-steps.js';
import { disagrees, keptAnswer, widestRequest } from './quiet-mode.js';
import {
  covers,
  cutSpares,
  type DayRange,
  emptyReading,
  heldWhole,
  type InstantsReading,
  itemDay,
  itemTime,
  largestToJudge,
  learnFromResponse,
  requestFor,
  type ServerReading,
  widened,
} from './server-reading.js';
import { daySlice, type InstantRange, instantsVerdict, sliceRequest } from './time-slices.js';

/**
 * Once per run and resource: whether the reading learned before has gone stale. Evidence only
 * ever narrows a request, so a server that changed its reading (SPEC-GAPS: one server over time
 * may pick differently), say to an exclusive startdate, would answer the narrow request with
 * less than the day, silently. The request that holds the day under every reading settles it:
 * items of the day the narrow answer lacked mean the reading is reset and learned again.
 */

/**
 * What the wide answer says of the narrow one: 'stale' when it holds items the narrow answer
 * should have held and lacked; 'holds' when it proves the reading for the run; 'unproven' when
 * nothing in it can tell (a later day of the run checks again).
 */
export type CheckVerdict = 'holds' | 'unproven' | 'stale';

/**
 * Checks per run and resource whose widest answer came back cut. Four: unbounded costs a widest
 * request for nearly every quiet day of a busy source (the time-slices trial: 415 requests
 * instead of 333 where instants are refused; four: 339). Where a stored reading says instants are
 * honoured, the check by instants (checkByInstants) replaces these: in the capped search
 * (test/extract/capped-readings.test.ts) the cut checks alone left 69 days short, it leaves none.
 * Where this run's probe proved them honoured, it replaces every check after the first cut one
 * (the time-slices bench, first backfill: 206 requests, 197 to 199 with it).
 */
const MAX_CUT_CHECKS = 4;

export function checkVerdict(check: {
  day: DayString;
  reading: ServerReading;
  /** The narrow request and its answer, asked under `reading`. */
  range: DayRange;
  answer: readonly unknown[];
  /** The answer to the request that holds the day under every reading. */
  wide: readonly unknown[];
}): CheckVerdict {
  const { day, reading, range } = check;
  // Not only the day: every item the reading says the narrow answer holds whole. On a quiet
  // server the day alone may have no item where an old reading now misses some.
  const held = heldIn(check.wide, range, reading);
  // Nothing there proves nothing either way.
  if (held.length === 0) return 'unproven';
  const seen = new Set(check.answer.map(itemIdentity));
  if (!held.every((item) => seen.has(itemIdentity(item)))) return 'stale';
  // The reading holds as far as these items tell. Only the day's own items make that the run's
  // verdict: a neighbour's may sit where old and new readings agree while the day's are all
  // where they differ (a server now 5 h behind with an exclusive startdate answers the old
  // request with the next day's items alone).
  return held.some((item) => itemDay(item) === day) ? 'holds' : 'unproven';
}

/** Whether `item` falls on one of the UTC days `range` asks for. */
function onDays(item: unknown, range: DayRange): boolean {
  const day = itemDay(item);
  return day !== undefined && day >= range.startdate && day <= range.enddate;
}

/** The items of `answer` that the answer to `range` holds whole if `reading` holds. */
function heldIn(answer: readonly unknown[], range: DayRange, reading: ServerReading): unknown[] {
  return answer.filter((item) => {
    const time = itemTime(item);
    return time !== undefined && heldWhole(range, reading, time);
  });
}

export interface ReadingCheckInput {
  day: DayString;
  knowledge: ResourceKnowledge;
  range: DayRange;
  answer: readonly unknown[];
  /** Asks a request the way the day's plan does (limit steps, items held, reading learned). */
  ask: (range: DayRange) => Plan<unknown[]>;
  /** Asks with instants the way the day's plan asks (items held); 'refused' for an HTTP 400. */
  askInstants: (range: InstantRange) => Plan<unknown[] | 'refused'>;
  /** The items the day's plan holds so far. */
  held: () => readonly unknown[];
  /** Whether an answer of this many items may have been cut (our limit or a proved cap). */
  cut: (count: number) => boolean;
  /** Whether a whole answer of this many items leaves the source quiet (quiet-mode.ts). */
  quiet: (count: number) => boolean;
  /** An answer the day's plan holds already to a request wider than the day's (a cap check's). */
  asked?: { range: DayRange; answer: readonly unknown[] };
}

/**
 * Whether the answer to `range` cannot settle the day: the request no longer covers the day, the
 * run went quiet (quiet-mode.ts) since it was asked narrow, or the run's check found the reading
 * it was asked under stale (and reset it). Windows run side by side on one knowledge: an answer
 * asked under the reading another window is checking waits for the verdict, and is asked again if
 * the reading moved meanwhile.
 */
export function* staleReading(input: ReadingCheckInput): Plan<boolean> {
  const { knowledge } = input;
  yield* verdictReached(knowledge, 'reading');
  if (!covers(input.range, requestFor(input.day, knowledge.reading))) return true;
  const widest = widestRequest(input.day);
  if (covers(input.range, widest)) {
    // Held under any reading: nothing to check it against, and the run's check counts as made (a
    // reading learned from nothing this run needs none).
    knowledge.staleChecked = true;
    return knowledge.quiet === true ? yield* compareQuiet(input) : false;
  }
  if (knowledge.quiet === true) return true;
  if (checkedByInstants(knowledge)) return yield* checkByInstants(input);
  const checks = !knowledge.staleChecked;
  // A writer that trusts the run's check, made by another, still asks once whether the source is
  // quiet: the check may have settled on a day that proved nothing where this one's items fall.
  if (!checks && (knowledge.quiet !== undefined || !input.quiet(input.answer.length))) {
    knowledge.quiet ??= false;
    return false;
  }
  knowledge.staleChecked = true;
  const release = claimVerdict(knowledge, 'reading');
  try {
    return yield* checkReading(input, widest, checks);
  } catch (error) {
    // A check that failed was not made: another window makes it.
    if (checks) knowledge.staleChecked = false;
    throw error;
  } finally {
    release();
  }
}

/** The check, or a trusting writer's question whether the source is quiet: asks the widest request. */
function* checkReading(input: ReadingCheckInput, widest: DayRange, checks: boolean): Plan<boolean> {
  const { knowledge } = input;
  // A widest answer came back cut already, and this run proved instants honoured: the day's UTC day
  // asked with instants is never cut by busy neighbours, and it holds the day under any reading.
  if (checks && (knowledge.cutChecks ?? 0) > 0 && instantsProvedThisRun(knowledge))
    return yield* checkByInstants(input);
  const held = heldWidest(input, widest);
  const asked = held?.range ?? widest;
  const largestBefore = knowledge.reading.largestResponse;
  const wide = held?.answer ?? (yield* input.ask(widest));
  let verdict = checkVerdict({ ...input, reading: knowledge.reading, wide });
  // As large as any answer of the run, the widest may be cut by a cap the run has not seen, and
  // keep only items the narrow answer holds: it agrees only once a wider answer brings more, and
  // one that brings no more leaves the source not quiet (its widest answers may all be cut).
  if (
    verdict === 'holds' &&
    held === undefined &&
    !input.cut(wide.length) &&
    wide.length >= largestToJudge(largestBefore, knowledge.reading)
  ) {
    if ((yield* input.ask(widened(widest, 7))).length <= wide.length) {
      verdict = 'unproven';
      knowledge.quiet ??= false;
    }
  }
  if (verdict === 'stale') {
    relearn(knowledge, asked, wide);
    return true;
  }
  if (input.cut(wide.length)) {
    // A cut answer lacks items, never holds false ones: it proves a reading stale, but its
    // silence proves nothing (a busy neighbour fills it), so a later day of the run checks again,
    // a few times only: on a busy source every widest answer is cut.
    knowledge.cutChecks = (knowledge.cutChecks ?? 0) + 1;
    if (checks && knowledge.cutChecks < MAX_CUT_CHECKS) knowledge.staleChecked = false;
    knowledge.quiet = false;
    return false;
  }
  if (verdict === 'unproven' && checks) knowledge.staleChecked = false;
  // A wider answer read instead counts what it holds on the widest request's days: what that would
  // have answered (only those it holds whole under every reading would count a source of 40 items a
  // day quiet).
  const widestCount = held === undefined ? wide.length : wide.filter((item) => onDays(item, widest)).length;
  knowledge.quiet ??= input.quiet(widestCount) && allDated(wide);
  // Both answers are whole: the run's later widest answers are compared with them.
  if (knowledge.quiet)
    knowledge.quietAnswers = [
      keptAnswer(input.range, input.answer),
      held === undefined ? keptAnswer(widest, wide) : keptAnswer(asked, wide, widest),
    ];
  // The day's items are all held: the widest answer, whole, holds them under any reading.
  return false;
}

/**
 * An answer the day's plan holds already (a cap check's, a week wider on each side) that holds
 * the widest request's items: the check reads it instead of asking the widest. Only one proved
 * whole there. On a quiet source quiet mode keeps it, by its own range, among the answers it
 * compares (quiet-mode.ts, lacksHeld judges each answer by the request it answered): wider than
 * the widest, it holds whole every item a widest answer would, and where it disagrees with a
 * later answer the widest request is asked in its stead (compareQuiet).
 *
 * Whole there: a cap not yet seen may lie between the widest answer's size and this one's, and cut
 * it unseen; a cut answer lacks items, and those it lacks may be the day's the reading misses. So
 * only an answer smaller than one the run had (any cap lies above it), or one listed by dt that
 * runs past the day's request, a day more for a server day not UTC's, on the side a cut drops
 * (cutSpares; a site's first day has no item before it): the check reads it there.
 */
function heldWidest(
  input: ReadingCheckInput,
  widest: DayRange,
): { range: DayRange; answer: readonly unknown[] } | undefined {
  const { asked, knowledge } = input;
  if (asked === undefined || !covers(asked.range, widest) || input.cut(asked.answer.length)) return undefined;
  const { reading } = knowledge;
  const whole =
    asked.answer.length < reading.largestResponse ||
    cutSpares(reading, asked.answer, addDays(input.range.startdate, -1), addDays(input.range.enddate, 1));
  return whole ? asked : undefined;
}

/**
 * A whole widest answer in quiet mode: compared with the run's others, it may prove the reading
 * stale; one too large for a quiet source ends quiet mode. Either way it holds its day, unless it
 * holds an item without a readable dt: then quiet mode ends and the day is asked narrow (true).
 *
 * Two answers asked moments apart also differ when an item arrived (or went) between them, which
 * no reading explains: the older request is asked again before the difference counts. An item
 * that came meanwhile is in the fresh answer too and the two agree; a stale reading still splits
 * them. So a busy moment costs a request, never a reading learned again for nothing (and a
 * "reading changed" the server never made).
 */
function* compareQuiet(input: ReadingCheckInput): Plan<boolean> {
  const { knowledge } = input;
  if (!allDated(input.answer)) {
    // An item without a readable dt belongs to no day we can tell, and a widest answer spans
    // five: filed with this day, it would count against the day's invalid share. The narrow
    // request holds the day's alone.
    endQuiet(knowledge);
    return true;
  }
  if (!input.quiet(input.answer.length)) {
    endQuiet(knowledge);
    return false;
  }
  const kept = keptAnswer(input.range, input.answer);
  for (;;) {
    const others = knowledge.quietAnswers ?? [];
    const other = others.find((older) => disagrees(knowledge.reading, kept, [older]));
    if (other === undefined) break;
    const range = other.standsFor ?? other.range;
    const again = yield* input.ask(range);
    // Another window may have ended quiet mode or learned the reading again meanwhile.
    if (knowledge.quiet !== true) return false;
    if (!input.quiet(again.length) || !allDated(again)) {
      endQuiet(knowledge);
      return false;
    }
    const fresh = keptAnswer(range, again);
    if (disagrees(knowledge.reading, kept, [fresh])) {
      relearn(knowledge, input.range, input.answer);
      return false;
    }
    const current = knowledge.quietAnswers ?? [];
    const at = current.indexOf(other);
    if (at >= 0) current[at] = fresh;
  }
  knowledge.quietAnswers = [...(knowledge.quietAnswers ?? []), kept];
  return false;
}

/**
 * A quiet day's narrow answer, asked under a reading an earlier run learned, checked against its
 * UTC day asked with instants, which holds the day whatever the bounds and the server's day (as a
 * time slice is asked: time-slices.ts). Beside a day above the cap the widest request comes back
 * cut and can prove nothing, so on a capped source only this check can: made for every quiet day,
 * it costs one request a day, and the day then holds its UTC day's items whatever the reading
 * (an empty day, empty here too, is settled on the two: day-plan.ts, utcDayEmpty).
 * Items of the day the narrow answer lacked, items held that this answer lacks though it keeps
 * inside the day (cut below every cap the run knows), or an answer cut where the narrow one was
 * not, prove the reading stale; a 400, or items outside the instants, prove instants no longer
 * honoured. Either way the reading changed: it is learned again from this run's answers
 * (readingChanged).
 */
export function* checkByInstants(input: ReadingCheckInput): Plan<boolean> {
  const { knowledge } = input;
  const relearned = knowledge.relearned;
  const slice = daySlice(input.day);
  const known = [...input.held()];
  const answer = yield* input.askInstants(sliceRequest(slice));
  if (answer === 'refused') return readingChanged(knowledge, 'refused');
  const mayBeCut = input.cut(answer.length);
  const verdict = instantsVerdict({ slice, answer, known, cut: mayBeCut });
  if (verdict === 'ignored') return readingChanged(knowledge, 'ignored');
  const cut = verdict === 'cut' || mayBeCut;
  // Another window may have found the reading changed meanwhile.
  if (knowledge.relearned !== relearned || knowledge.reading.instants !== 'honoured') return true;
  // Held from any of the day's answers so far: the narrow one, a check's, a proof's.
  const seen = new Set(known.map(itemIdentity));
  const lacked = answer.some((item) => itemDay(item) === input.day && !seen.has(itemIdentity(item)));
  if (cut || lacked) return readingChanged(knowledge, 'honoured');
  knowledge.staleChecked = true;
  knowledge.quiet ??= false;
  return false;
}

/** Instants proved honoured by this run's own probe, not taken from a stored reading. */
function instantsProvedThisRun(knowledge: ResourceKnowledge): boolean {
  return (
    knowledge.storedReading !== true &&
    knowledge.instantsProbed === true &&
    knowledge.reading.instants === 'honoured'
  );
}

/** Whether a quiet day's answer is checked against its UTC day asked with instants (checkByInstants). */
export function checkedByInstants(knowledge: ResourceKnowledge): boolean {
  return knowledge.storedReading === true && knowledge.reading.instants === 'honoured';
}

/**
 * The reading an earlier run learned proved changed this run (its bounds or server day, or what
 * the server does with instants): learned again from nothing, so every day is asked with its
 * neighbours until this run's answers prove the server's day again, and a day whose answer stays
 * cut and cannot be sliced is flagged truncated. Returns true: the day is asked again.
 */
export function readingChanged(knowledge: ResourceKnowledge, instants: InstantsReading): true {
  const { reading } = knowledge;
  // The cap and the largest answer were learned this run (a run learns them again), of this server.
  const { cap, largestResponse } = reading;
  forgetReading(reading);
  Object.assign(reading, { instants, cap, largestResponse });
  knowledge.staleChecked = true;
  startAfresh(knowledge);
  return true;
}

/**
 * The run's proof found the reading stale (reading-session.ts): learned again from nothing, so
 * every day is asked with its neighbours until answers prove the server's day again.
 */
export function readingStale(knowledge: ResourceKnowledge): void {
  forgetReading(knowledge.reading);
  knowledge.staleChecked = true;
  startAfresh(knowledge);
}

/** What every re-learning of a run resets besides the reading itself. */
function startAfresh(knowledge: ResourceKnowledge): void {
  knowledge.relearned = (knowledge.relearned ?? 0) + 1;
  knowledge.storedReading = false;
  endQuiet(knowledge);
  // Day answers found aligned were asked under the reading now known stale.
  delete knowledge.dayAnswersAligned;
  // A change the old reading's answers showed (a listing, mixed bounds) is answered by this.
  if (knowledge.session !== undefined) knowledge.session.lapsed = false;
}

/** Whether every item has a readable dt: only such an answer can be filed by day in quiet mode. */
function allDated(answer: readonly unknown[]): boolean {
  return answer.every((item) => itemTime(item) !== undefined);
}

/** Quiet mode off for the run: the narrow requests take over. */
export function endQuiet(knowledge: ResourceKnowledge): void {
  knowledge.quiet = false;
  delete knowledge.quietAnswers;
}

/**
 * The reading proved stale: learned again from nothing but `answer`. A reading learned from this
 * server's answers needs no quiet mode: the narrow requests it allows hold their days.
 */
function relearn(knowledge: ResourceKnowledge, range: DayRange, answer: readonly unknown[]): void {
  forgetReading(knowledge.reading);
  learnFromResponse(knowledge.reading, range, answer);
  startAfresh(knowledge);
}

/**
 * Everything learned but a refused limit (a maximum is proved by a 400, not by items) and what
 * instants do (proved by their own requests, not by a day's bounds).
 */
function forgetReading(reading: ServerReading): void {
  Object.assign(reading, {
    ...emptyReading(),
    limitRefused: reading.limitRefused,
    instants: reading.instants,
  });
}
