import { ApiError } from '../../src/errors.js';
import { newDayFetch, planDay } from '../../src/extract/day-plan.js';
import type { Answer, FetchedDay, LimitPolicy, ResourceKnowledge } from '../../src/extract/plan-steps.js';
import {
  emptyReading,
  endInclusive,
  type ServerReading,
  serverDay,
  startInclusive,
} from '../../src/extract/server-reading.js';
import type { DayItems } from '../../src/simulator/day-data.js';
import { createRandom, hashSeed, type Random } from '../../src/simulator/random.js';
import { DEFAULT_SETTINGS, type ServingSettings } from '../../src/simulator/settings.js';
import { selectWindow, type WindowSource } from '../../src/simulator/window-query.js';
import { addDays, DAY_MS, type DayString, dayStartMs, daysFrom } from '../../src/time/days.js';
import { changedPairs, type SimReading } from '../helpers/sim-readings.js';

/**
 * The search for days loaded short after a server changed its reading between runs, without HTTP
 * or a database: a day's plan (day-plan.ts) is driven against the simulator's own window logic
 * (selectWindow) over a quiet data set, and what each day holds is compared with the truth.
 */

export interface QuietItem {
  id: string;
  dt: string;
}

/** A quiet server: 0 to `most` items a day over `from..to`, drawn from `seed`, served under a reading. */
export class QuietServer {
  requests = 0;
  private readonly days = new Map<DayString, QuietItem[]>();
  private readonly source: WindowSource;
  private shuffles: Random;

  constructor(
    seed: number,
    from: DayString,
    to: DayString,
    public reading: SimReading,
    most = 3,
  ) {
    for (const day of daysFrom(from, to)) {
      const rng = createRandom(hashSeed(seed, 'quiet', day));
      const times = Array.from({ length: rng.int(0, most) }, () => rng.int(0, DAY_MS - 1)).sort(
        (a, b) => a - b,
      );
      this.days.set(
        day,
        times.map((offset, i) => ({
          id: `${day}#${i}`,
          dt: new Date(dayStartMs(day) + offset).toISOString(),
        })),
      );
    }
    this.source = {
      from,
      to,
      day: (day) =>
        ({ feedback: this.days.get(day) ?? [], survey: [], recordings: [] }) as unknown as DayItems,
    };
    this.shuffles = createRandom(hashSeed(seed, 'order'));
  }

  itemsOn(day: DayString): string[] {
    return (this.days.get(day) ?? []).map((item) => item.id).sort();
  }

  /** The answer to one request, as the simulator's route gives it (a 400 above the maximum limit). */
  answer(range: { startdate: string; enddate: string }, limit: number): Answer {
    this.requests += 1;
    const { maxLimit } = this.reading;
    // Instants are refused, as by the simulator's default.
    if ((maxLimit !== null && limit > maxLimit) || range.startdate.length > 10 || range.enddate.length > 10)
      return { kind: 'failed', error: new ApiError('HTTP 400', { status: 400 }, { retryable: false }) };
    const settings: ServingSettings = { ...DEFAULT_SETTINGS, ...this.reading };
    const items = selectWindow(this.source, 'feedback', { ...range, limit }, settings, this.shuffles);
    return { kind: 'items', items: (items as unknown as QuietItem[]).map((item) => ({ ...item })) };
  }
}

const POLICY: LimitPolicy = { limit: 1000, maxLimit: 10_000 };

/** Fetches one day by its plan against the server, sending every request it yields. */
export function fetchDaySync(server: QuietServer, day: DayString, knowledge: ResourceKnowledge): FetchedDay {
  const plan = planDay(newDayFetch('feedback', day, POLICY, knowledge));
  let step = plan.next();
  while (!step.done) {
    const wanted = step.value;
    if (wanted.kind === 'wait') throw new Error('one window at a time never waits');
    step = plan.next(server.answer(wanted.range, wanted.limit));
  }
  return step.value;
}

/** What a run starts from: the stored reading (run-sync's readServerReadings: cap and size learned again). */
export function storedKnowledge(reading: ServerReading, checked = false): ResourceKnowledge {
  return {
    reading: { ...reading, largestResponse: 0, cap: null },
    ...(checked ? { staleChecked: true } : {}),
  };
}

export interface Tally {
  /** Days settled whole (not flagged) with fewer items than the server holds for them. */
  short: string[];
  flagged: number;
  days: number;
  requests: number;
  /**
   * Cases whose reading stored after the backfill still says what the new server contradicts: an
   * exclusive bound taken as inclusive, or another server day taken for UTC's.
   */
  staleStored: number;
}

function fetchAll(
  server: QuietServer,
  days: readonly DayString[],
  knowledgeOf: (i: number) => ResourceKnowledge,
  tally: Tally,
  label: string,
): void {
  const before = server.requests;
  days.forEach((day, i) => {
    const fetched = fetchDaySync(server, day, knowledgeOf(i));
    tally.days += 1;
    if (fetched.truncated) tally.flagged += 1;
    const got = new Set(fetched.onDay.map((item) => (item as QuietItem).id));
    if (!fetched.truncated && server.itemsOn(day).some((id) => !got.has(id)))
      tally.short.push(`${label} ${day}`);
  });
  tally.requests += server.requests - before;
}

function contradicted(reading: ServerReading, served: SimReading): boolean {
  return (
    (served.startdate === 'exclusive' && startInclusive(reading)) ||
    (served.enddate === 'exclusive' && endInclusive(reading)) ||
    (served.dayOffsetMinutes !== 0 && serverDay(reading) === 'utc')
  );
}

export const TODAY = '2026-11-20';

/**
 * One case: reading A learned by a first load, the server then plays B; a backfill of days never
 * loaded (newest first, as a queued one, or oldest first, by the case's seed), split between a
 * writer that checks the stored reading and one that trusts that check (a queued run's later
 * worker), then a nightly sync of the last three days. Counts the short days of the last two runs.
 */
export function playCase(seed: number, before: SimReading, after: SimReading, tally: Tally): void {
  const rng = createRandom(hashSeed(seed, 'case'));
  const server = new QuietServer(seed, addDays(TODAY, -40), addDays(TODAY, 5), before);
  const first = storedKnowledge(emptyReading());
  const firstDays = daysFrom(addDays(TODAY, -30), addDays(TODAY, -22));
  fetchAll(
    server,
    firstDays,
    () => first,
    { short: [], flagged: 0, days: 0, requests: 0, staleStored: 0 },
    'first',
  );

  server.reading = after;
  const stored = first.reading;
  const backfill = daysFrom(addDays(TODAY, -20), addDays(TODAY, -5));
  if (rng.chance(0.5)) backfill.reverse();
  const checker = storedKnowledge(stored);
  // A writer that joins later (a queued run's worker) starts from what the checker stored, and
  // trusts its check once it was recorded; it takes every third day.
  let trusting: ResourceKnowledge | undefined;
  backfill.forEach((day, i) => {
    const trusts = i % 3 === 2;
    if (trusts) trusting ??= storedKnowledge(checker.reading, checker.staleChecked === true);
    const knowledge = trusts ? (trusting as ResourceKnowledge) : checker;
    fetchAll(server, [day], () => knowledge, tally, trusts ? 'backfill (joined)' : 'backfill');
  });

  if (contradicted(checker.reading, after)) tally.staleStored += 1;
  const nightly = storedKnowledge(checker.reading);
  fetchAll(server, daysFrom(addDays(TODAY, -3), addDays(TODAY, -1)), () => nightly, tally, 'nightly');
}

/** Plays a case per pair; every short day is named, the first of a case with its pair. */
export function search(count: number, seed: number): Tally {
  const tally: Tally = { short: [], flagged: 0, days: 0, requests: 0, staleStored: 0 };
  changedPairs(count, seed).forEach(([before, after], i) => {
    const found = tally.short.length;
    playCase(seed + i, before, after, tally);
    if (tally.short.length > found)
      tally.short[tally.short.length - 1] += ` (${JSON.stringify(before)} -> ${JSON.stringify(after)})`;
  });
  return tally;
}
