import { describe, expect, it } from 'vitest';
import { ApiError } from '../../src/errors.js';
import { newDayFetch, planDay } from '../../src/extract/day-plan.js';
import type { Answer, FetchedDay, ResourceKnowledge } from '../../src/extract/plan-steps.js';
import { readingStale } from '../../src/extract/reading-check.js';
import { emptyReading, halves } from '../../src/extract/server-reading.js';
import type { DayItems } from '../../src/simulator/day-data.js';
import { createRandom } from '../../src/simulator/random.js';
import { DEFAULT_SETTINGS, type ServingSettings } from '../../src/simulator/settings.js';
import { parseWindowQuery, selectWindow } from '../../src/simulator/window-query.js';
import { addDays, DAY_MS, type DayString, dayStartMs, daysFrom } from '../../src/time/days.js';
import { POLICY } from './reading-search.js';

interface Item {
  id: string;
  dt: string;
}

const DAY = '2026-03-10';

/** A server over `counts` items per server day, spread evenly through each, served under `settings`. */
function serverOver(settings: Partial<ServingSettings>, counts: ReadonlyMap<DayString, number>) {
  const offsetMs = -(settings.dayOffsetMinutes ?? 0) * 60_000;
  const byUtcDay = new Map<DayString, Item[]>();
  for (const [day, count] of counts)
    for (let i = 0; i < count; i++) {
      const time = dayStartMs(day) + offsetMs + Math.floor(((i + 0.5) * DAY_MS) / count);
      const dt = new Date(time).toISOString();
      const list = byUtcDay.get(dt.slice(0, 10)) ?? [];
      list.push({ id: `${day}#${i}`, dt });
      byUtcDay.set(dt.slice(0, 10), list);
    }
  const days = [...counts.keys()];
  const served: ServingSettings = { ...DEFAULT_SETTINGS, ...settings };
  const source = {
    from: addDays(days[0] as DayString, -3),
    to: addDays(days[days.length - 1] as DayString, 3),
    day: (day: DayString) =>
      ({ feedback: byUtcDay.get(day) ?? [], survey: [], recordings: [] }) as unknown as DayItems,
  };
  const shuffle = createRandom(7);
  return {
    requests: 0,
    onUtcDay: (day: DayString) => (byUtcDay.get(day) ?? []).map((item) => item.id).sort(),
    answer(range: { startdate: string; enddate: string }, limit: number): Answer {
      this.requests += 1;
      const parsed = parseWindowQuery(range, served.instants);
      if (!parsed.ok)
        return { kind: 'failed', error: new ApiError('HTTP 400', { status: 400 }, { retryable: false }) };
      return {
        kind: 'items',
        items: selectWindow(source, 'feedback', { ...parsed.query, limit }, served, shuffle).map((item) => ({
          ...item,
        })),
      };
    },
  };
}

function fetchDays(server: ReturnType<typeof serverOver>, days: DayString[], knowledge: ResourceKnowledge) {
  const fetched = new Map<DayString, FetchedDay>();
  for (const day of days) {
    const plan = planDay(newDayFetch('feedback', day, POLICY, knowledge));
    let step = plan.next();
    while (!step.done) {
      if (step.value.kind !== 'ask') throw new Error('one window at a time only asks');
      step = plan.next(server.answer(step.value.range, step.value.limit));
    }
    fetched.set(day, step.value);
  }
  return fetched;
}

const ids = (items: readonly unknown[]) => items.map((item) => (item as Item).id).sort();

/**
 * A UTC day on a server 5 h off UTC spans two server days. When the request that covers both comes
 * back cut at the cap and instants cannot slice it, the server day that fits under the cap is read
 * whole on its own: its items of the UTC day are all held, and the day stays flagged while any of
 * its items is missing (a day held whole by chance, in no order, may stay flagged too).
 */
describe('a cut UTC day over two server days keeps the server day it can read whole', () => {
  for (const offset of [-300, 300])
    for (const busyFirst of [true, false])
      for (const startdate of ['inclusive', 'exclusive'] as const)
        for (const enddate of ['inclusive', 'exclusive'] as const)
          for (const order of ['oldest-first', 'newest-first', 'random'] as const)
            for (const instants of ['ignored', 'refused'] as const) {
              // UTC-5: UTC day D holds the end of server day D-1 and most of D; UTC+5, most of D and the start of D+1.
              const covering = offset < 0 ? [addDays(DAY, -1), DAY] : [DAY, addDays(DAY, 1)];
              const [busy, light] = (busyFirst ? covering : [...covering].reverse()) as [
                DayString,
                DayString,
              ];
              it(`UTC${offset < 0 ? '-' : '+'}5, server day ${busy} 150 items, ${light} 60, cap 100, ${startdate}/${enddate}, ${order}, instants ${instants}`, () => {
                const counts = new Map(daysFrom(addDays(DAY, -6), addDays(DAY, 4)).map((day) => [day, 20]));
                counts.set(busy, 150);
                counts.set(light, 60);
                const server = serverOver(
                  { startdate, enddate, order, instants, cap: 100, dayOffsetMinutes: offset },
                  counts,
                );
                const fetched = fetchDays(server, daysFrom(addDays(DAY, -4), DAY), {
                  reading: emptyReading(),
                });
                const day = fetched.get(DAY) as FetchedDay;
                const got = new Set(ids(day.onDay));
                const unread = server.onUtcDay(DAY).filter((id) => !got.has(id));
                const lightOnDay = server.onUtcDay(DAY).filter((id) => id.startsWith(`${light}#`));
                expect(lightOnDay.length).toBeGreaterThan(10);
                expect(unread.filter((id) => id.startsWith(`${light}#`))).toEqual([]);
                if (unread.length > 0) expect(day.truncated).toBe(true);
              });
            }
});

describe('halves of a request over two server days', () => {
  it('an inclusive startdate and an exclusive enddate (D-1..D+1) halve into the two server days', () => {
    // An item 5 h after a startdate midnight proves it inclusive (an exclusive one serves nothing
    // before 10 h); none proves the enddate inclusive.
    const reading = { ...emptyReading(), headMs: 5 * 3_600_000, tailMs: 4 * 3_600_000 };
    expect(halves({ startdate: addDays(DAY, -1), enddate: addDays(DAY, 1) }, reading)).toEqual([
      { startdate: addDays(DAY, -1), enddate: DAY },
      { startdate: DAY, enddate: addDays(DAY, 1) },
    ]);
  });
});

/** Item objects (anything with an id) reachable from `value`, counted once per reference. */
function itemCopies(value: unknown): number {
  if (typeof value !== 'object' || value === null) return 0;
  if ('id' in value) return 1;
  return (Array.isArray(value) ? value : Object.values(value)).reduce((n: number, v) => n + itemCopies(v), 0);
}

/**
 * A busy day is asked again and again: a larger limit, the request narrowed, its halves, the
 * narrower request and its halves once more, each answer up to the cap parsed anew. What the
 * day's fetch keeps holds each item once, whatever the number of answers: the answers to the
 * day's request are kept as the spans the slices go by, not as items.
 */
describe('a cut day asked again and again', () => {
  it('holds each item it was served once, not once per answer', () => {
    const counts = new Map(daysFrom(addDays(DAY, -3), addDays(DAY, 3)).map((day) => [day, 20]));
    counts.set(DAY, 400);
    counts.set(addDays(DAY, 1), 200);
    const server = serverOver(
      { startdate: 'inclusive', enddate: 'inclusive', order: 'oldest-first', instants: 'refused', cap: 100 },
      counts,
    );
    const state = newDayFetch('feedback', DAY, POLICY, { reading: emptyReading() });
    const plan = planDay(state);
    let served = 0;
    let step = plan.next();
    while (!step.done) {
      if (step.value.kind !== 'ask') throw new Error('one window at a time only asks');
      const answer = server.answer(step.value.range, step.value.limit);
      if (answer.kind === 'items') served += answer.items.length;
      step = plan.next(answer);
      expect(itemCopies(state)).toBe(state.items.length);
    }
    expect(step.value.truncated).toBe(true);
    // Two answers of 100, the second's request inside the first's and other items in the first,
    // prove the cap before any wider request is asked (day-plan.ts, cappedAt).
    expect(state.dayAnswers.length).toBeGreaterThanOrEqual(2);
    // The same items came many times over.
    expect(served).toBeGreaterThan(2 * state.items.length);
  });
});

/**
 * A cut day is read in halves cut out under the reading of the moment. Windows run side by side:
 * another one may find that reading stale (a deploy turned the startdate exclusive) while this
 * one's halves are out, and the reading learned afresh from the new deploy's answers then takes a
 * one-day half, answered empty (an exclusive startdate and enddate a day apart hold nothing), for
 * a part that holds none of the day. The day is flagged: asked anew during a rolling deploy, it
 * would be answered under one of the readings as its halves were.
 */
describe('a cut day whose halves outlive the reading they were cut out under', () => {
  it('is flagged, never settled on the cut answer', () => {
    const counts = new Map(daysFrom(addDays(DAY, -6), addDays(DAY, 4)).map((day) => [day, 30]));
    counts.set(DAY, 109);
    const served = { order: 'oldest-first', instants: 'refused', cap: 100, enddate: 'exclusive' } as const;
    const before = serverOver({ ...served, startdate: 'inclusive' }, counts);
    const after = serverOver({ ...served, startdate: 'exclusive' }, counts);
    // Proved before the deploy: an inclusive startdate, an exclusive enddate, UTC days, cap 100.
    const knowledge: ResourceKnowledge = {
      reading: {
        ...emptyReading(),
        headMs: 3_600_000,
        tailMs: -3_600_000,
        order: 'oldest-first',
        cap: 100,
        largestResponse: 100,
        instants: 'refused',
      },
      staleChecked: true,
      quiet: false,
    };
    const plan = planDay(newDayFetch('feedback', DAY, POLICY, knowledge));
    let asked = 0;
    let step = plan.next();
    while (!step.done) {
      if (step.value.kind !== 'ask') throw new Error('one window at a time only asks');
      asked += 1;
      // The day's request comes back cut and is halved; as a half is out (the fourth request),
      // another window's check finds the reading stale and learns it again from nothing, and
      // the deploy answers since.
      const server = asked <= 4 ? before : after;
      const answer = server.answer(step.value.range, step.value.limit);
      if (asked === 4) readingStale(knowledge);
      step = plan.next(answer);
    }
    const day = step.value;
    const held = ids(day.onDay).filter((id) => id.startsWith(`${DAY}#`));
    expect(knowledge.relearned).toBeGreaterThanOrEqual(1);
    // 109 items, a cap of 100, no instants to slice with: flagged.
    expect(held.length).toBeLessThan(109);
    expect(day.truncated).toBe(true);
  });
});
