import type { ApiClient } from '../api/api-client.js';
import { ApiError } from '../errors.js';
import type { WindowedResource } from '../schemas/resources.js';
import { addDays, type DayString } from '../time/days.js';
import { itemIdentity } from './item-identity.js';
import {
  covers,
  cutSparesDay,
  type DayRange,
  emptyReading,
  halves,
  heldWhole,
  itemDay,
  itemTime,
  learnFromResponse,
  proofRequest,
  requestFor,
  type ServerReading,
  sameRange,
} from './server-reading.js';

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
  /** That check while a window of the run makes it: the run's other windows wait for its verdict. */
  staleChecking?: Promise<void>;
  /** How often this run found the stored reading stale and learned it again from nothing. */
  relearned?: number;
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
  /** Some of the day's items may be missing: a response for it stayed at the server's cap or our ceiling. */
  truncated: boolean;
  requests: number;
}

/** Each escalation multiplies the limit; few round trips reach any ceiling. */
const ESCALATION_FACTOR = 4;
/** Evidence only narrows or widens a bounded number of times; more rounds means a bug. */
const MAX_ROUNDS = 32;
/**
 * How far a cap check widens the request, in days on each side. A week at once: its answer (more
 * items than any one day) sets a floor that later days of the run rarely reach, so a run makes
 * about one check per resource on a server without a cap.
 */
const CHECK_WIDENINGS = [7] as const;
/** Requests per run and resource spent proving the server's day; on a UTC server one or two do. */
const MAX_PROOFS = 12;

type Saturation = 'complete' | 'limit' | 'cap' | 'suspect';

/**
 * Fetches one UTC day of a windowed resource, whatever the server's reading of the spec's gaps
 * (see server-reading.ts for how bounds and the server's day are learned).
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
 * 3. A request over several server days that stays cut is split in halves, so neighbours cannot
 *    crowd the day out; a part that still stays cut leaves the day flagged truncated, loaded as
 *    far as it came.
 */
export async function fetchDay(
  client: ApiClient,
  resource: WindowedResource,
  day: DayString,
  policy: LimitPolicy,
  knowledge: ResourceKnowledge,
): Promise<FetchedDay> {
  const { reading } = knowledge;
  const items: unknown[] = [];
  /**
   * Identities of the items held. A larger limit or a wider request answers again much of what
   * came before (a cut day: 1,000, 4,000, then 10,000 items): an item an earlier answer held is
   * not held a second time.
   */
  const kept = new Set<string>();
  const hold = (response: readonly unknown[]): void => {
    const ids = response.map(itemIdentity);
    response.forEach((item, i) => {
      if (!kept.has(ids[i] as string)) items.push(item);
    });
    for (const id of ids) kept.add(id);
  };
  let requests = 0;
  let servedCount = 0;
  let limit = startLimit(policy, knowledge);

  const ask = async (range: DayRange): Promise<unknown[]> => {
    for (;;) {
      requests += 1;
      try {
        const response = await client.window(resource, { ...range, limit }, { day });
        knowledge.responses = (knowledge.responses ?? 0) + 1;
        if (reading.limitRefused !== null && limit > (knowledge.limitAccepted ?? 0))
          knowledge.limitAccepted = limit;
        if (reading.limitRefused !== null && limit >= reading.limitRefused) reading.limitRefused = null;
        hold(response);
        learnFromResponse(reading, range, response);
        return response;
      } catch (error) {
        if (!(error instanceof ApiError) || error.context.status !== 400 || limit <= 1) throw error;
        // Above the server's maximum: step down, never below a limit it took.
        reading.limitRefused = Math.min(reading.limitRefused ?? limit, limit);
        const accepted = knowledge.limitAccepted ?? 0;
        limit =
          accepted > 0 && accepted < limit
            ? Math.max(accepted, Math.floor(limit / 2))
            : Math.floor(limit / 2);
      }
    }
  };

  const cut = (count: number) => count >= limit || (reading.cap !== null && count >= reading.cap);

  const judge = (count: number, largestBefore: number): Saturation => {
    if (count >= limit) return 'limit';
    if (reading.cap !== null && count >= reading.cap) return 'cap';
    return count > 0 && count >= largestBefore ? 'suspect' : 'complete';
  };

  /**
   * Whether a response of `first` was cut by a silent cap (see step 2 above): 'whole' when a
   * wider request brought more, 'capped' when none brought more but one held other items,
   * 'unsure' when everything around the day is empty and nothing can tell.
   */
  const cappedAt = async (
    range: DayRange,
    first: readonly unknown[],
  ): Promise<'whole' | 'capped' | 'unsure'> => {
    const seen = new Set(first.map(itemIdentity));
    const holdsNew = (response: readonly unknown[]) => response.some((item) => !seen.has(itemIdentity(item)));
    for (const widen of CHECK_WIDENINGS) {
      const wider = await ask({
        startdate: addDays(range.startdate, -widen),
        enddate: addDays(range.enddate, widen),
      });
      if (wider.length > first.length) return 'whole';
      if (holdsNew(wider)) {
        reading.cap = wider.length;
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
      if (holdsNew(await ask(side))) {
        reading.cap = first.length;
        return 'capped';
      }
    }
    return 'unsure';
  };

  /** Spends a request to prove the server's day on a side, when an item near a midnight allows. */
  const prove = async (): Promise<void> => {
    for (const side of ['start', 'end'] as const) {
      if ((knowledge.proofs ?? 0) >= MAX_PROOFS) return;
      const range = proofRequest(reading, side, items);
      if (range === undefined) continue;
      knowledge.proofs = (knowledge.proofs ?? 0) + 1;
      await ask(range);
    }
  };

  /**
   * Once per run and resource: whether the reading learned before has gone stale. Evidence only
   * ever narrows a request, so a server that changed its reading (SPEC-GAPS: one server over time
   * may pick differently), say to an exclusive startdate, would answer the narrow request with
   * less than the day, silently. The request that holds the day under every reading settles it:
   * items of the day the narrow answer lacked mean the reading is reset and learned again.
   */
  const staleReading = async (range: DayRange, answer: readonly unknown[]): Promise<boolean> => {
    // Windows run side by side on one knowledge: an answer asked under the reading another window
    // is checking waits for the verdict, and is asked again if the reading moved meanwhile.
    while (knowledge.staleChecking !== undefined) await knowledge.staleChecking;
    if (!covers(range, requestFor(day, reading))) return true;
    if (knowledge.staleChecked) return false;
    knowledge.staleChecked = true;
    const check = checkReading(range, answer);
    const settled = check.then(
      () => undefined,
      () => {
        // A check that failed was not made: another window makes it.
        knowledge.staleChecked = false;
      },
    );
    knowledge.staleChecking = settled;
    void settled.then(() => {
      if (knowledge.staleChecking === settled) delete knowledge.staleChecking;
    });
    return check;
  };

  const checkReading = async (range: DayRange, answer: readonly unknown[]): Promise<boolean> => {
    const widest = requestFor(day, emptyReading());
    if (covers(range, widest)) return false;
    const wide = await ask(widest);
    if (cut(wide.length)) return false;
    // Not only the day: every item the reading says the narrow answer holds whole. On a quiet
    // server the day alone may have no item where an old reading now misses some.
    const held = wide.filter((item) => {
      const time = itemTime(item);
      return time !== undefined && heldWhole(range, reading, time);
    });
    // Nothing there proves nothing either way: a later day of the run checks again.
    if (held.length === 0) {
      knowledge.staleChecked = false;
      return false;
    }
    const seen = new Set(answer.map(itemIdentity));
    if (held.every((item) => seen.has(itemIdentity(item)))) {
      // The reading holds as far as these items tell. Only the day's own items make that the
      // run's verdict: a neighbour's may sit where old and new readings agree while the day's are
      // all where they differ (a server now 5 h behind with an exclusive startdate answers the old
      // request with the next day's items alone). Without one, a later day checks again.
      if (!held.some((item) => itemDay(item) === day)) knowledge.staleChecked = false;
      return false;
    }
    forgetReading();
    knowledge.relearned = (knowledge.relearned ?? 0) + 1;
    learnFromResponse(reading, widest, wide);
    return true;
  };

  /** Everything learned but a refused limit (a maximum is proved by a 400, not by items). */
  function forgetReading(): void {
    Object.assign(reading, { ...emptyReading(), limitRefused: reading.limitRefused });
  }

  /** Asks each part of a cut request on its own, halving again while a part stays cut. */
  const split = async (range: DayRange, depth: number): Promise<boolean> => {
    const parts = halves(range, reading);
    if (parts === undefined || depth > 4) return true;
    let truncated = false;
    for (const part of parts) {
      const response = await ask(part);
      servedCount = Math.max(servedCount, response.length);
      // A neighbour's items often sit near a midnight: they may prove the server's day, after
      // which the caller asks again without that neighbour.
      await prove();
      if (cut(response.length) && !cutSparesDay(reading, response, day) && (await split(part, depth + 1)))
        truncated = true;
    }
    return truncated;
  };

  /**
   * A whole answer settles the day when the day reaches no further than what was asked, under the
   * reading as it now stands, and the reading it was asked under still holds.
   */
  const settles = async (range: DayRange, answer: readonly unknown[]): Promise<boolean> =>
    covers(range, requestFor(day, reading)) && !(await staleReading(range, answer));

  let asked: DayRange | undefined;
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const range = requestFor(day, reading);
    asked = range;
    const largestBefore = reading.largestResponse;
    const response = await ask(range);
    servedCount = Math.max(servedCount, response.length);
    await prove();
    let saturation = judge(response.length, largestBefore);
    if (saturation === 'complete') {
      // Whole for what was asked; ask again only if the day may reach beyond it.
      if (await settles(range, response)) return done(false);
      continue;
    }
    // The answer may be cut. If it proved something that moves the request, ask that first.
    if (!sameRange(range, requestFor(day, reading))) continue;
    if (saturation === 'suspect') {
      const verdict = await cappedAt(range, response);
      if (verdict !== 'capped') {
        // The check's own items may have moved the request: then the answer is not settled yet.
        if (!covers(range, requestFor(day, reading))) continue;
        // Whole for what was asked, as on the path above: the reading it was asked under is checked too.
        if (
          (verdict === 'whole' || sameRange(range, requestFor(day, reading))) &&
          (await settles(range, response))
        )
          return done(false);
        continue;
      }
      // A cap proved above this answer did not cut it: it is whole for what was asked.
      if (!cut(response.length)) {
        if (await settles(range, response)) return done(false);
        continue;
      }
      saturation = 'cap';
    }
    // Cut, but at an end that holds none of the day's items.
    if (cutSparesDay(reading, response, day)) return done(false);
    if (saturation === 'limit' && canEscalate()) {
      limit = escalate();
      continue;
    }
    const truncated = await split(range, 0);
    // The parts' items may have narrowed the request; ask that before calling the day cut.
    if (truncated && !sameRange(range, requestFor(day, reading))) continue;
    return done(truncated);
  }
  throw new Error(
    `fetching ${resource} ${day} did not settle after ${MAX_ROUNDS} rounds (last asked ${asked?.startdate}..${asked?.enddate})`,
  );

  function done(truncated: boolean): FetchedDay {
    return {
      ...partitionByDay(items, day, requests > 1),
      requestedLimit: limit,
      servedCount,
      truncated,
      requests,
    };
  }

  /** Our ceiling, lowered by a server maximum: below a refused limit, at the largest one taken since. */
  function ceiling(): number {
    const refused = reading.limitRefused;
    if (refused === null) return policy.maxLimit;
    return Math.min(policy.maxLimit, knowledge.limitAccepted ?? refused - 1);
  }

  function canEscalate(): boolean {
    if (limit < ceiling()) return true;
    // Once per run, try the refused limit again: the server may have raised its maximum.
    return reading.limitRefused !== null && limit < policy.maxLimit && !knowledge.refusedRetried;
  }

  function escalate(): number {
    if (limit >= ceiling()) {
      knowledge.refusedRetried = true;
      return Math.min(reading.limitRefused ?? limit * ESCALATION_FACTOR, policy.maxLimit);
    }
    return Math.min(limit * ESCALATION_FACTOR, ceiling());
  }
}

/** Splits items into the day's (or unplaceable) and other days', dropping verbatim repeats. */
export function partitionByDay(
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

function startLimit(policy: LimitPolicy, knowledge: ResourceKnowledge): number {
  const first = Math.min(policy.limit, policy.maxLimit);
  const refused = knowledge.reading.limitRefused;
  if (refused === null || first < refused) return first;
  return Math.max(1, knowledge.limitAccepted ?? Math.floor(refused / 2));
}
