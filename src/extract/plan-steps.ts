import type { DayString } from '../time/days.js';
import type { ReadingSession } from './reading-session.js';
import type { DayRange, ServerReading } from './server-reading.js';
import type { InstantRange } from './time-slices.js';

/**
 * The vocabulary between a day's plan (day-plan.ts), which decides what to ask, and the driver
 * (fetchDay), which sends it: the plan yields a Step and is resumed with the Answer to it.
 */
export type Step =
  /** Send this request: with days, or with instants (a time slice of a day above the cap). */
  | {
      kind: 'ask';
      range: DayRange | InstantRange;
      limit: number;
      /** The day it is for, where not the plan's own (the run's end asks the day after a stretch). */
      day?: DayString;
    }
  /** Another window of the run is reaching a verdict this plan depends on: resume once it is done. */
  | { kind: 'wait'; until: Promise<void> }
  /**
   * Drive these plans side by side, each as its own (their requests share the run's bound):
   * resume once every one is done. For plans that decide nothing from each other's answers.
   */
  | { kind: 'all'; plans: Plan<unknown>[] };

export type Answer =
  | { kind: 'items'; items: unknown[] }
  /** The request failed: the plan decides whether that is a refused limit or the day's failure. */
  | { kind: 'failed'; error: unknown }
  /** A wait, or plans side by side, is over. */
  | { kind: 'waited' };

/** A plan, or a part of one, that finishes with a T. */
export type Plan<T> = Generator<Step, T, Answer>;

/**
 * What one window of a run finds out for all of its windows of a source and resource: whether the
 * stored reading still holds (reading-check.ts), whether the server honours instants
 * (day-slices.ts). Windows run side by side on one knowledge: while one asks, the others wait for
 * its verdict rather than ask the same question, which costs a server that refuses or ignores
 * instants one request a run, not one a window.
 */
export type Verdict = 'reading' | 'instants';

/** Waits while another window of the run is reaching `verdict`. */
export function* verdictReached(knowledge: ResourceKnowledge, verdict: Verdict): Plan<void> {
  for (let until = knowledge.pending?.[verdict]; until !== undefined; until = knowledge.pending?.[verdict])
    yield { kind: 'wait', until };
}

/**
 * This window reaches `verdict` for the run: the others wait (verdictReached) until the release it
 * returns is called, once the answer is read or the request failed.
 */
export function claimVerdict(knowledge: ResourceKnowledge, verdict: Verdict): () => void {
  let wake = (): void => {};
  const until = new Promise<void>((resolve) => {
    wake = resolve;
  });
  knowledge.pending = { ...knowledge.pending, [verdict]: until };
  return () => {
    if (knowledge.pending?.[verdict] === until) delete knowledge.pending[verdict];
    wake();
  };
}

export interface LimitPolicy {
  /** First `limit` sent for a day. */
  limit: number;
  /** Largest `limit` a saturated day is asked again with. */
  maxLimit: number;
}

/**
 * What a run knows about one source and resource: the reading (shared by its windows, so what
 * one window learns serves the others), and the run's own memory of what it tried.
 */
export interface ResourceKnowledge {
  reading: ServerReading;
  /** Largest limit the server answered without a 400 since it refused one. */
  limitAccepted?: number;
  /** A refused limit is tried once more per run, so a raised maximum is noticed. */
  refusedRetried?: boolean;
  /** Requests spent this run proving the server's day (bounded: see MAX_PROOFS). */
  proofs?: number;
  /** Responses received this run: a reading nothing answered to has nothing new to store. */
  responses?: number;
  /** Whether this run has checked that the stored reading still holds (see staleReading). */
  staleChecked?: boolean;
  /** Verdicts a window of the run is reaching for all of them (claimVerdict): the others wait. */
  pending?: Partial<Record<Verdict, Promise<void>>>;
  /**
   * Quiet mode (quiet-mode.ts): every day is asked the widest request. Undefined until a widest
   * answer, or a narrow one too large for a quiet source, decides it for the run.
   */
  quiet?: boolean;
  /** In quiet mode, the run's whole answers, each compared with the next to prove the reading stale. */
  quietAnswers?: KeptAnswer[];
  /** How often this run found the stored reading stale and learned it again from nothing. */
  relearned?: number;
  /** Whether this run has asked whether the server honours instants (once per run: day-slices.ts). */
  instantsProbed?: boolean;
  /**
   * Whether a day's own cut answer is taken as served from the day's midnight on the side its
   * order lists first (day-slices.ts, unreadOfDay): true once a slice asked there came back empty,
   * false for the run once one held items (the day requests no longer serve UTC days).
   */
  dayAnswersAligned?: boolean;
  /** Checks of the stored reading this run whose widest answer came back cut (reading-check.ts). */
  cutChecks?: number;
  /**
   * Whether the reading the run goes by was learned by an earlier run: set as the run's first day
   * starts, false once the run learns it again from nothing. While it is and instants are
   * honoured, each quiet day is checked against its UTC day asked with instants (reading-check.ts).
   */
  storedReading?: boolean;
  /** The run's proofs that the reading still holds, and the days they settle (reading-session.ts). */
  session?: ReadingSession;
}

/**
 * A whole answer kept for comparison (quiet-mode.ts): its request and its items' times. Told apart
 * by dt alone: an item served again with other values is still there; two items of one millisecond
 * can only hide a difference, never make one.
 */
export interface KeptAnswer {
  range: DayRange;
  times: ReadonlySet<number>;
  /**
   * The widest request a wider answer stands in for (the cap check's, a week wider, which the
   * run's check read instead): asked in its stead once the answer disagrees with another.
   */
  standsFor?: DayRange;
}

export interface FetchedDay {
  /**
   * Items whose dt is on the day, and items without a readable dt (validation quarantines them),
   * once each however many responses held them.
   */
  onDay: unknown[];
  /** Items of other days the responses held: every returned item is stored, whatever was asked. */
  otherDays: unknown[];
  /** The limit of the last request. */
  requestedLimit: number;
  /** Most items one response for this day returned. */
  servedCount: number;
  /**
   * Some of the day's items may be missing: a response for it stayed at the server's cap or our
   * ceiling, and time slices could not read it whole.
   */
  truncated: boolean;
  /**
   * Settled whole at a size no cap the run knew then could have cut: that size. A cap proved
   * later at it (by this run, or another worker of it) means the day may be short.
   */
  uncappedServed?: number;
  /**
   * The request the day was settled on, where its own answer settled it (not a wide request that
   * holds it under any reading): a reading that learns more later in the run may find it never
   * held the day whole (the queued run's last proof reads it from the ledger).
   */
  settledUnder?: DayRange;
  /**
   * Flagged while the server changed how it answers: read again, by the run's next pass or first
   * by the next run (day-plan.ts, planDay), whose steady reading may read it whole.
   */
  readAgain?: true;
  requests: number;
}
