import { describe, expect, it } from 'vitest';
import type { ApiClient } from '../../src/api/api-client.js';
import { leanCeilingRequest } from '../../src/extract/day-plan.js';
import { proveRun } from '../../src/extract/fetch-day.js';
import type { ResourceKnowledge } from '../../src/extract/plan-steps.js';
import { daysAfterStretches, newSession } from '../../src/extract/reading-session.js';
import { emptyReading, knownCaps } from '../../src/extract/server-reading.js';
import { addDays, type DayString, daysFrom } from '../../src/time/days.js';
import {
  type DaySizes,
  fetchDaySync,
  POLICY,
  QuietServer,
  storedKnowledge,
  TODAY,
} from './reading-search.js';

/**
 * The run's last proof asks what no answer of its own decides: the days after its stretches, and
 * the days a ceiling check reads again. Asked one after the other, each cost the run's end a round
 * trip (seven in a year's backfill with 8 requests in flight, where one or two would do): they go
 * side by side, within the run's bound on requests like its windows.
 */

const READING = {
  startdate: 'inclusive',
  enddate: 'inclusive',
  order: 'oldest-first',
  cap: 10_000,
  maxLimit: null,
  dayOffsetMinutes: 0,
  instants: 'refused',
} as const;

/** A client over an in-memory server that answers on a later turn of the event loop, and counts what it holds at once. */
function countingClient(server: QuietServer) {
  const seen = { most: 0, now: 0, asked: [] as string[], limits: [] as number[] };
  const client = {
    window: async (_resource: unknown, query: { startdate: string; enddate: string; limit: number }) => {
      seen.now += 1;
      seen.most = Math.max(seen.most, seen.now);
      seen.asked.push(`${query.startdate}..${query.enddate}`);
      seen.limits.push(query.limit);
      await new Promise((resolve) => setImmediate(resolve));
      seen.now -= 1;
      const answer = server.answer({ startdate: query.startdate, enddate: query.enddate }, query.limit);
      if (answer.kind === 'failed') throw answer.error;
      return answer.kind === 'items' ? answer.items : [];
    },
  } as unknown as ApiClient;
  return { client, seen };
}

/** The days read by a run, one after the other, on `server`: its knowledge, as the run's end finds it. */
function readDays(server: QuietServer, days: readonly DayString[]): ResourceKnowledge {
  const knowledge = storedKnowledge(emptyReading());
  for (const day of days) fetchDaySync(server, day, knowledge);
  return knowledge;
}

describe("the run's last proof", () => {
  it('asks the days after its stretches side by side', async () => {
    const sizes: DaySizes = { most: 6, least: 2 };
    const server = new QuietServer(11, addDays(TODAY, -60), addDays(TODAY, -1), READING, sizes);
    // Three stretches of days, each followed by a day the run did not read.
    const stretches = [-30, -20, -10].flatMap((start) =>
      daysFrom(addDays(TODAY, start), addDays(TODAY, start + 3)),
    );
    const knowledge = readDays(server, stretches);
    const after = daysAfterStretches(knowledge.session!, TODAY);
    expect(after).toHaveLength(3);

    const { client, seen } = countingClient(server);
    await proveRun(client, 'feedback', POLICY, knowledge, TODAY);

    const covering = (day: DayString) =>
      seen.asked.some((range) => range.slice(0, 10) <= day && day <= range.slice(-10));
    for (const day of after) expect(covering(day)).toBe(true);
    expect(seen.most).toBeGreaterThanOrEqual(after.length);
  });

  it('reads the days settled at a ceiling side by side, and finds no cap on a steady server', async () => {
    // Every day exactly 120 items: a size the run's days settled at again and again, none larger,
    // which a cap lowered during the run would also make (reading-session.ts, ceilingOf).
    const days = daysFrom(addDays(TODAY, -12), addDays(TODAY, -1));
    const exact = Object.fromEntries(days.map((day) => [day, 120]));
    const server = new QuietServer(5, addDays(TODAY, -60), addDays(TODAY, -1), READING, { most: 0, exact });
    const knowledge = readDays(server, days);
    const { client, seen } = countingClient(server);
    const reopened = await proveRun(client, 'feedback', POLICY, knowledge, TODAY);

    // The check reads again the first four days settled at the size (day-plan.ts, CEILING_ASKS), at once.
    const dayAlone = seen.asked.filter((range) => days.some((day) => range === `${day}..${day}`));
    expect(dayAlone.length).toBeGreaterThanOrEqual(4);
    expect(seen.most).toBeGreaterThanOrEqual(4);
    expect(knownCaps(knowledge.reading)).not.toContain(120);
    expect(reopened).toEqual([]);
  });

  it("asks a ceiling check's days, its wider request and the days after the stretches in one round", async () => {
    // Three stretches of days of exactly 120 items: a ceiling to check, and three days after.
    const stretches = [-30, -20, -10].flatMap((start) =>
      daysFrom(addDays(TODAY, start), addDays(TODAY, start + 3)),
    );
    const exact = Object.fromEntries(stretches.map((day) => [day, 120]));
    const server = new QuietServer(5, addDays(TODAY, -60), addDays(TODAY, -1), READING, { most: 0, exact });
    const knowledge = readDays(server, stretches);
    const after = daysAfterStretches(knowledge.session!, TODAY);
    expect(after).toHaveLength(3);
    const { client, seen } = countingClient(server);
    await proveRun(client, 'feedback', POLICY, knowledge, TODAY);

    const wider = seen.asked.filter((range) => range.slice(0, 10) < range.slice(-10));
    expect(wider.length).toBeGreaterThanOrEqual(1);
    // The four days read again (CEILING_ASKS), the first one's wider request, the three days after.
    expect(seen.most).toBeGreaterThanOrEqual(4 + 1 + after.length);
  });

  /**
   * Days -20 to -14 of 150 items, then days of exactly 200: a ceiling at 200 from day -13, with the
   * run's days on both sides of it. Listed by dt, the ceiling's wider request starts beside the day
   * on the side its listing reaches it from and asks the size and one item more.
   */
  function ceilingRun(order: 'oldest-first' | 'newest-first', cap: number) {
    const days = daysFrom(addDays(TODAY, -20), addDays(TODAY, -1));
    const exact = Object.fromEntries(days.map((day, i) => [day, i < 7 ? 150 : 200]));
    const reading = { ...READING, order };
    const server = new QuietServer(5, addDays(TODAY, -60), addDays(TODAY, -1), reading, { most: 0, exact });
    const knowledge = readDays(server, days);
    // A deploy of the service now cuts every answer at `cap`.
    server.reading = { ...reading, cap };
    return { server, knowledge, first: days[7] as DayString };
  }

  for (const order of ['oldest-first', 'newest-first'] as const)
    it(`checks a ceiling on a server listing ${order} with one wider request of the size and one item more`, async () => {
      const { server, knowledge, first } = ceilingRun(order, 10_000);
      const { client, seen } = countingClient(server);
      const reopened = await proveRun(client, 'feedback', POLICY, knowledge, TODAY);

      const wider = seen.asked.flatMap((range, i) =>
        range.slice(0, 10) < range.slice(-10) ? [{ range, limit: seen.limits[i] }] : [],
      );
      // A week wide on both sides at the day's limit of 1,000 answered seven days of other items
      // (oldest first: the week before; newest first: the week after) and never reached the day:
      // a second request, from the day, at 1,000 again.
      const week =
        order === 'oldest-first' ? `${first}..${addDays(first, 7)}` : `${addDays(first, -7)}..${first}`;
      expect(wider).toEqual([{ range: week, limit: 201 }]);
      expect(knownCaps(knowledge.reading)).not.toContain(200);
      expect(reopened).toEqual([]);
    });

  for (const order of ['oldest-first', 'newest-first'] as const)
    it(`finds a cap at a ceiling's size on a server listing ${order}, its answer all of the day`, async () => {
      // Cut at 200 now: the wider request, from the day, comes back with the day's 200 items alone,
      // short of the 201 the run saw in its range.
      const { server, knowledge } = ceilingRun(order, 200);
      const { client } = countingClient(server);
      const reopened = await proveRun(client, 'feedback', POLICY, knowledge, TODAY);

      expect(knownCaps(knowledge.reading)).toContain(200);
      expect(reopened.length).toBeGreaterThanOrEqual(13);
    });

  describe("the ceiling check's request on a server listing by dt (leanCeilingRequest)", () => {
    const day = '2026-03-26' as DayString;
    /** What the run saw of each day, by its offset from `day`. */
    function knowing(order: 'oldest-first' | 'newest-first', counts: Record<number, number>) {
      // The reading as a run learns it from days read on such a server: each day's request is the day.
      const reading = { ...READING, order };
      const days = daysFrom(addDays(TODAY, -12), addDays(TODAY, -1));
      const exact = Object.fromEntries(days.map((read) => [read, 200]));
      const server = new QuietServer(5, addDays(TODAY, -60), addDays(TODAY, -1), reading, { most: 0, exact });
      const knowledge = readDays(server, days);
      const session = newSession(1);
      for (const [offset, count] of Object.entries(counts))
        session.seen.set(addDays(day, Number(offset)), { count, first: 0, last: 0 });
      knowledge.session = session;
      return knowledge;
    }

    it('asks a week from the day, oldest first, for the size and one item more', () => {
      const lean = leanCeilingRequest(knowing('oldest-first', { [-3]: 50, 0: 20, 1: 15 }), day, 33);
      expect(lean).toEqual({ range: { startdate: day, enddate: '2026-04-02' }, limit: 34 });
    });

    it('asks a week up to the day, newest first', () => {
      const lean = leanCeilingRequest(knowing('newest-first', { [-3]: 50, 0: 20, 1: 15 }), day, 33);
      expect(lean).toEqual({ range: { startdate: '2026-03-19', enddate: day }, limit: 34 });
    });

    it('asks as before where the run saw no more items in that week than the size', () => {
      // A quiet day settled on its five-day request of 33 items: the week from it, the data ending,
      // holds those 33 alone, and an answer of 33 would be all of them, no cap.
      expect(
        leanCeilingRequest(knowing('oldest-first', { [-1]: 10, 0: 5, 1: 10, 2: 18 }), day, 33),
      ).toBeUndefined();
      expect(
        leanCeilingRequest(knowing('oldest-first', { [-1]: 10, 0: 5, 1: 10, 2: 19 }), day, 33)?.limit,
      ).toBe(34);
    });
  });
});
