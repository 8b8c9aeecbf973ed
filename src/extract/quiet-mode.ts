import type { DayString } from '../time/days.js';
import type { KeptAnswer, ResourceKnowledge } from './plan-steps.js';
import {
  type DayRange,
  emptyReading,
  heldWhole,
  itemTime,
  requestFor,
  type ServerReading,
} from './server-reading.js';

/**
 * Quiet mode. The run's check of a stored reading (reading-check.ts) proves it only as far as the
 * items it sees: on a quiet source (a few items a day) the day it falls on may have none where an
 * old reading and the server's new one differ, and a day's narrow request then loses the hours
 * between them, silently. There, asking each day the widest request (the one that holds the day
 * under every reading) costs what the narrow one does, one request, and holds the day whatever
 * the reading: a run whose check answered small does so for every window, and files items by
 * their dt. An answer that may have been cut (our limit, a cap) turns it off for the run: the
 * narrow requests, and what the plan does with a cut, take over.
 *
 * The widest answers are also the run's check: each is compared with the others (and with the
 * narrow answer the check was made on), so an item one holds that another lacks although the
 * reading says it holds it proves the reading stale, on whichever day its items fall, once the
 * older request asked again still differs (an item that arrived or went between the two answers
 * makes them differ too: reading-check.ts, compareQuiet).
 */

/** Most items a widest answer may hold for the source to count as quiet: about 8 a day. */
export const QUIET_MOST = 40;

/**
 * Whether an answer of `count` items, whole, leaves the source quiet: small, and well under our
 * limit and any cap proved, so that an answer the server cut does not pass for a quiet one.
 */
export function quietAnswer(count: number, limit: number, reading: ServerReading): boolean {
  return count <= QUIET_MOST && 2 * count < limit && (reading.cap === null || 2 * count < reading.cap);
}

/** The request that holds `day` under every reading, whatever the evidence. */
export function widestRequest(day: DayString): DayRange {
  return requestFor(day, emptyReading());
}

/** What the run asks for `day`: the widest request in quiet mode, else the narrowest the reading allows. */
export function runRequest(day: DayString, knowledge: ResourceKnowledge): DayRange {
  return knowledge.quiet === true ? widestRequest(day) : requestFor(day, knowledge.reading);
}

export function keptAnswer(range: DayRange, answer: readonly unknown[], standsFor?: DayRange): KeptAnswer {
  const times = new Set<number>();
  for (const item of answer) {
    const time = itemTime(item);
    if (time !== undefined) times.add(time);
  }
  return standsFor === undefined ? { range, times } : { range, times, standsFor };
}

/** Whether `a` lacks an item `b` holds that the reading says `a`'s request holds whole. */
export function lacksHeld(reading: ServerReading, a: KeptAnswer, b: KeptAnswer): boolean {
  for (const time of b.times) if (!a.times.has(time) && heldWhole(a.range, reading, time)) return true;
  return false;
}

/** Whether `answer` and any of `others` disagree with the reading, one way or the other. */
export function disagrees(
  reading: ServerReading,
  answer: KeptAnswer,
  others: readonly KeptAnswer[],
): boolean {
  return others.some((other) => lacksHeld(reading, answer, other) || lacksHeld(reading, other, answer));
}
