import type { DayRange } from './server-reading.js';

/**
 * The vocabulary between a day's plan (day-plan.ts), which decides what to ask, and the driver
 * (fetchDay), which sends it: the plan yields a Step and is resumed with the Answer to it.
 */
export type Step =
  /** Send this request. */
  | { kind: 'ask'; range: DayRange; limit: number }
  /** Another window of the run is checking the reading this plan depends on: resume once it is done. */
  | { kind: 'wait'; until: Promise<void> };

export type Answer =
  | { kind: 'items'; items: unknown[] }
  /** The request failed: the plan decides whether that is a refused limit or the day's failure. */
  | { kind: 'failed'; error: unknown }
  | { kind: 'waited' };

/** A plan, or a part of one, that finishes with a T. */
export type Plan<T> = Generator<Step, T, Answer>;
