import { type DayString, HOUR_MS } from '../time/days.js';
import { claimVerdict, type Plan, type ResourceKnowledge, verdictReached } from './plan-steps.js';
import { readingChanged } from './reading-check.js';
import { CEILING_LEAST, itemTime, type ServerReading, suspectCap } from './server-reading.js';
import {
  afterSlice,
  type DayAnswer,
  daySlice,
  type InstantRange,
  instantsVerdict,
  MAX_SLICE_REQUESTS,
  probeSlice,
  type Slice,
  sliceRequest,
  slicesAfterDay,
} from './time-slices.js';

/**
 * How a day's plan reads a request that stays cut: in time slices (time-slices.ts decides each
 * step). Whether the server honours instants is asked once per run and resource, by a probe
 * around a held item before the day's first slice, so a server that ignores or refuses them costs
 * one request a run and nothing more (the day is then halved as before); the run's other
 * windows wait for the verdict. Every slice's answer is checked again: one that shows instants
 * not honoured ends the slicing, and the day stays truncated as it was.
 */
export interface SliceInput {
  day: DayString;
  knowledge: ResourceKnowledge;
  /** The items the day's plan holds so far (it holds each answer's items as they come). */
  held: () => readonly unknown[];
  /**
   * The day's cut answers to requests that served the whole day: the first slice's answer, already
   * given (time-slices.ts, slicesAfterDay).
   */
  dayAnswers: () => readonly DayAnswer[];
  /** Asks with instants the way the day's plan asks; 'refused' for an HTTP 400. */
  ask: (range: InstantRange) => Plan<unknown[] | 'refused'>;
  /** Whether an answer of this many items may have been cut (our limit or a proved cap). */
  cut: (count: number) => boolean;
}

/** Whether the day was read whole in slices; false leaves it truncated, as loaded so far. */
export function* readInSlices(input: SliceInput): Plan<boolean> {
  const { knowledge } = input;
  yield* verdictReached(knowledge, 'instants');
  if (knowledge.instantsProbed) {
    if (knowledge.reading.instants !== 'honoured') return false;
    const unread = unreadOfDay(input);
    return yield* readSlices(input, unread.slices, unread.edges);
  }
  const first = yield* probe(input);
  if (first === undefined) return false;
  const rest = yield* readSlices(input, first.slices, first.edges);
  return rest && !first.cut;
}

/** The run's probe, the day's first slice: as askSlice, the day's other slices among those to ask. */
function* probe(input: SliceInput): Plan<SliceAnswer | undefined> {
  const { knowledge } = input;
  knowledge.instantsProbed = true;
  const release = claimVerdict(knowledge, 'instants');
  try {
    const slice = probeSlice(input.day, input.held());
    const step = yield* askSlice(input, slice);
    if (step === undefined) return undefined;
    const whole = daySlice(input.day);
    // A probe around one item only told; the day is read from what its own answers left.
    if (slice.startMs !== whole.startMs || slice.endMs !== whole.endMs)
      return { ...unreadOfDay(input), cut: false, inside: step.inside };
    return step;
  } catch (error) {
    // A probe that failed was not made: another window makes it.
    knowledge.instantsProbed = false;
    throw error;
  } finally {
    release();
  }
}

/**
 * The day's slices left by its own cut answers, and among them the edges: the hours between the
 * day's midnight and an answer's first item, which a day request served as the UTC day holds
 * nothing of. A server that moved its day or flipped a bound since the reading was learned
 * serves some other span under the same request (time-slices.ts, slicesAfterDay), so an edge is
 * asked until one comes back empty, once a run: then the run takes its day answers as aligned.
 * One that holds items proves them not, and every day of the run asks its edges.
 */
function unreadOfDay(input: SliceInput): { slices: Slice[]; edges: Slice[] } {
  const { knowledge } = input;
  const { order } = knowledge.reading;
  const answers = input.dayAnswers();
  const aligned = slicesAfterDay(input.day, answers, order, true);
  const slices = slicesAfterDay(input.day, answers, order, false);
  const edges = slices.filter((slice) => !aligned.some((other) => sameSlice(slice, other)));
  // Aligned once proved, but a rolling deploy answers old and new readings at random: an edge of
  // an hour or more, where a busy day's items come minutes apart, is asked all the same.
  const suspect = edges.some((edge) => edge.endMs - edge.startMs >= HOUR_MS);
  if (knowledge.dayAnswersAligned === true && !suspect) return { slices: aligned, edges: [] };
  return { slices, edges };
}

function insideSlice(slice: Slice, time: number | undefined): boolean {
  return time !== undefined && time >= slice.startMs && time < slice.endMs;
}

function sameSlice(a: Slice, b: Slice): boolean {
  return a.startMs === b.startMs && a.endMs === b.endMs;
}

/** Asks slices until none is left; false when one stayed cut or instants proved not honoured. */
function* readSlices(input: SliceInput, pending: Slice[], edges: readonly Slice[] = []): Plan<boolean> {
  let whole = true;
  const seen: SlicesSeen = { items: 0, ms: 0 };
  const { knowledge } = input;
  for (let requests = 0; pending.length > 0; requests++) {
    if (requests >= MAX_SLICE_REQUESTS) return false;
    const slice = pending.shift() as Slice;
    const step = yield* askSlice(input, slice, seen);
    if (step === undefined) return false;
    if (edges.some((edge) => sameSlice(edge, slice)) && knowledge.dayAnswersAligned !== false)
      knowledge.dayAnswersAligned = step.inside === 0;
    if (step.cut) whole = false;
    pending.unshift(...step.slices);
  }
  return whole;
}

/**
 * Instants proved not honoured. Where an earlier run learned them honoured, the server changed its
 * reading, and the rest of what that run learned is proved nothing: it is learned again.
 */
function refuted(knowledge: ResourceKnowledge, instants: 'refused' | 'ignored'): void {
  if (knowledge.reading.instants === 'honoured' && knowledge.storedReading === true)
    readingChanged(knowledge, instants);
  else knowledge.reading.instants = instants;
}

/**
 * What the day's slices showed so far: the items and milliseconds of those read whole (what sizes
 * the next split), and the size of the last answer cut below every cap the run knew.
 */
interface SlicesSeen {
  items: number;
  ms: number;
  lacking?: number;
}

/**
 * Whether the day is read on after a slice's answer cut below every cap the run knew (a held item
 * missing: instantsVerdict's 'cut'). Its size is one the server may now cut at: days settled at it
 * are read again (reopenUncapped) and answers of it taken as cut, unless below any cap played. A
 * cap cuts every answer it reaches at its own size: a smaller one lacking a held item again is not
 * a cap's doing (an item whose dt changed upstream meanwhile is missing from every slice around its
 * old instant), and the day stays cut, with no more asked.
 */
function readOnBelowCaps(reading: ServerReading, seen: SlicesSeen, size: number): boolean {
  if (seen.lacking !== undefined && size < seen.lacking) return false;
  seen.lacking = size;
  if (size >= CEILING_LEAST) suspectCap(reading, size);
  return true;
}

/** What a slice's answer leaves: the slices still to ask, and whether it stayed cut for good. */
interface SliceAnswer {
  slices: Slice[];
  cut: boolean;
  /** Items the answer held inside the slice (not at the instants just outside it). */
  inside: number;
  /** Of `slices`, the day's edges (unreadOfDay). */
  edges?: Slice[];
}

/**
 * Asks one slice and records what its answer says of instants: undefined when they are not
 * honoured (the reading says how), else what it leaves.
 */
function* askSlice(
  input: SliceInput,
  slice: Slice,
  seen: SlicesSeen = { items: 0, ms: 0 },
): Plan<SliceAnswer | undefined> {
  const { reading } = input.knowledge;
  const known = [...input.held()];
  const answer = yield* input.ask(sliceRequest(slice));
  if (answer === 'refused') {
    refuted(input.knowledge, 'refused');
    return undefined;
  }
  const mayBeCut = input.cut(answer.length);
  const verdict = instantsVerdict({ slice, answer, known, cut: mayBeCut });
  if (verdict === 'ignored') {
    refuted(input.knowledge, 'ignored');
    return undefined;
  }
  const inside = answer.filter((item) => insideSlice(slice, itemTime(item))).length;
  if (verdict === 'cut' && !readOnBelowCaps(reading, seen, answer.length))
    return { slices: [], cut: true, inside };
  const cut = verdict === 'cut' || mayBeCut;
  if (verdict === 'honoured' || verdict === 'cut') reading.instants = 'honoured';
  // An empty probe with nothing held inside it tells nothing: the day stays as it was.
  else if (reading.instants !== 'honoured') return undefined;
  if (!cut) {
    seen.items += answer.length;
    seen.ms += slice.endMs - slice.startMs;
  }
  const step = afterSlice(slice, answer, cut, reading.order, seen.ms > 0 ? seen.items / seen.ms : 0);
  return step.kind === 'more'
    ? { slices: step.slices, cut: false, inside }
    : { slices: [], cut: step.kind === 'cut', inside };
}
