import { describe, expect, it } from 'vitest';
import { ApiError } from '../../src/errors.js';
import { newDayFetch, planDay } from '../../src/extract/day-plan.js';
import type { FetchedDay, LimitPolicy, ResourceKnowledge } from '../../src/extract/fetch-day.js';
import { type Answer, claimVerdict, type Plan, type Step } from '../../src/extract/plan-steps.js';
import { emptyReading, knownCaps, type ServerReading } from '../../src/extract/server-reading.js';
import { addDays, type DayString } from '../../src/time/days.js';

// A day above the cap, driven by hand: the plan asks, a small server in this file answers.

const DAY = '2026-03-10';
const DAY_MS = 86_400_000;
const CAP = 100;
const POLICY: LimitPolicy = { limit: 1000, maxLimit: 4000 };

interface Item {
  id: string;
  dt: string;
}

/** `count` items of the day spread over it, oldest first, in pairs that share an instant. */
function dayItems(count: number, day: DayString = DAY): Item[] {
  const start = Date.parse(`${day}T00:00:00.000Z`);
  const step = Math.floor(DAY_MS / count) * 2;
  return Array.from({ length: count }, (_, i) => ({
    id: `${day}#${i}`,
    dt: new Date(start + Math.floor(i / 2) * step).toISOString(),
  }));
}

/** A reading proved before: inclusive bounds on UTC days, a cap of 100 proved. */
function proved(extra: Partial<ServerReading> = {}): ServerReading {
  return {
    ...emptyReading(),
    headMs: 60_000,
    tailMs: DAY_MS - 60_000,
    cap: CAP,
    largestResponse: CAP,
    ...extra,
  };
}

type Instants = 'honoured' | 'ignored' | 'refused';
type Order = 'oldest-first' | 'newest-first' | 'shuffled';

/**
 * An inclusive UTC server capping at 100. Days are read as days; instants as `instants` says
 * (honoured: startdate and enddate at `inclusivity` at the instant).
 */
function server(
  data: Item[],
  instants: Instants,
  order: Order,
  inclusivity: { start: boolean; end: boolean } = { start: true, end: true },
  /** How far the server's day starts after UTC midnight: a day it moved since it was learned. */
  dayShiftMs = 0,
) {
  let shuffles = 0;
  return (step: Step): Answer => {
    if (step.kind !== 'ask') return { kind: 'waited' };
    const { startdate, enddate } = step.range;
    const isInstant = (bound: string) => bound.length > 10;
    if ((isInstant(startdate) || isInstant(enddate)) && instants === 'refused')
      return { kind: 'failed', error: new ApiError('HTTP 400', { status: 400 }, { retryable: false }) };
    const honoured = instants === 'honoured';
    const from =
      honoured && isInstant(startdate)
        ? Date.parse(startdate) + (inclusivity.start ? 0 : 1)
        : Date.parse(`${startdate.slice(0, 10)}T00:00:00.000Z`) + dayShiftMs;
    const to =
      honoured && isInstant(enddate)
        ? Date.parse(enddate) + (inclusivity.end ? 1 : 0)
        : Date.parse(`${enddate.slice(0, 10)}T00:00:00.000Z`) + DAY_MS + dayShiftMs;
    let served = data.filter((item) => Date.parse(item.dt) >= from && Date.parse(item.dt) < to);
    if (order === 'newest-first') served = [...served].reverse();
    if (order === 'shuffled') {
      shuffles += 1;
      served = [...served].sort((a, b) => hash(a.id, shuffles) - hash(b.id, shuffles));
    }
    return { kind: 'items', items: served.slice(0, Math.min(step.limit, CAP)) };
  };
}

function hash(text: string, salt: number): number {
  let h = salt * 2_654_435_761;
  for (const char of text) h = Math.imul(h ^ char.charCodeAt(0), 16_777_619);
  return h >>> 0;
}

/** Runs a plan against a server to its end: the day, and the ranges it asked. */
function drive(plan: Plan<FetchedDay>, serve: (step: Step) => Answer): { day: FetchedDay; asked: string[] } {
  const asked: string[] = [];
  let step = plan.next();
  while (!step.done) {
    if (step.value.kind === 'ask') asked.push(`${step.value.range.startdate}..${step.value.range.enddate}`);
    step = plan.next(serve(step.value));
  }
  return { day: step.value, asked };
}

function fetchDay(knowledge: ResourceKnowledge, serve: (step: Step) => Answer) {
  return drive(planDay(newDayFetch('feedback', DAY, POLICY, knowledge)), serve);
}

const checked = (reading: ServerReading): ResourceKnowledge => ({ reading, staleChecked: true });
const ids = (items: unknown[]) => new Set(items.map((item) => (item as Item).id));

describe('a day above the cap, where the server honours instants', () => {
  const data = [...dayItems(20, addDays(DAY, -1)), ...dayItems(730), ...dayItems(20, addDays(DAY, 1))];
  const theDay = data.filter((item) => item.dt.startsWith(DAY));

  for (const order of ['oldest-first', 'newest-first', 'shuffled'] as const)
    for (const start of [true, false])
      for (const end of [true, false])
        it(`is read whole in time slices: ${order}, startdate ${start ? 'in' : 'ex'}clusive and enddate ${end ? 'in' : 'ex'}clusive at the instant`, () => {
          const knowledge = checked(proved({ order: order === 'shuffled' ? 'unordered' : order }));
          const { day } = fetchDay(knowledge, server(data, 'honoured', order, { start, end }));
          expect(day.truncated).toBe(false);
          expect(ids(day.onDay)).toEqual(ids(theDay));
          expect(knowledge.reading.instants).toBe('honoured');
        });

  it('pages by time in the order the server keeps: about one request per cap of items', () => {
    const knowledge = checked(proved({ order: 'newest-first' }));
    const { day } = fetchDay(knowledge, server(data, 'honoured', 'newest-first'));
    // 730 items at 100 a page, each page asking its last instant again: 8 pages, the probe and
    // its remainder (the probe ends in the middle of the day), and the day's first request.
    expect(day.truncated).toBe(false);
    expect(day.requests).toBeLessThanOrEqual(12);
  });

  it('a later day of the run slices at once, with no probe', () => {
    const knowledge: ResourceKnowledge = {
      ...checked(proved({ order: 'oldest-first', instants: 'honoured' })),
      instantsProbed: true,
    };
    const { asked, day } = fetchDay(knowledge, server(data, 'honoured', 'oldest-first'));
    // The day's own answer was its first slice: the next starts at that answer's last instant,
    // whose tie comes again. 730 items, 100 a page, 98 new after the first: 8 requests, the ideal.
    const last = Date.parse(theDay[CAP - 1]?.dt ?? '');
    expect(asked[1]).toBe(`${new Date(last - 1).toISOString()}..2026-03-11T00:00:00.000Z`);
    expect(day.truncated).toBe(false);
    expect(ids(day.onDay)).toEqual(ids(theDay));
    expect(day.requests).toBe(8);
  });

  it('with instants known honoured, a cut request over the days before is sliced, not halved', () => {
    // The startdate's reading unproved and the run's proofs spent: the day is asked with two before.
    const knowledge: ResourceKnowledge = {
      ...checked(proved({ headMs: null, order: 'newest-first', instants: 'honoured' })),
      instantsProbed: true,
      proofs: 12,
    };
    const { asked, day } = fetchDay(knowledge, server(data, 'honoured', 'newest-first'));
    expect(asked[0]).toBe('2026-03-08..2026-03-10');
    // Halving would ask the days before apart, then the day twice: the slices read it instead.
    expect(asked.filter((range) => range.length === 22)).toEqual(['2026-03-08..2026-03-10']);
    expect(day.truncated).toBe(false);
    expect(ids(day.onDay)).toEqual(ids(theDay));
  });

  it('with instants not known yet, a cut request over the days before is probed, then sliced, not halved', () => {
    const knowledge: ResourceKnowledge = {
      ...checked(proved({ headMs: null, order: 'newest-first' })),
      proofs: 12,
    };
    const { asked, day } = fetchDay(knowledge, server(data, 'honoured', 'newest-first'));
    expect(asked[0]).toBe('2026-03-08..2026-03-10');
    // The probe, the millisecond around a held item, comes next: no request by days after the first.
    expect(asked[1]).toMatch(/^2026-03-10T\d\d:\d\d:\d\d\.\d{3}Z\.\.2026-03-10T/);
    expect(asked.filter((range) => range.length === 22)).toEqual(['2026-03-08..2026-03-10']);
    expect(knowledge.reading.instants).toBe('honoured');
    expect(day.truncated).toBe(false);
    expect(ids(day.onDay)).toEqual(ids(theDay));
  });

  it('a stored honoured reading on a server that now ignores instants: a crowded day is still read whole', () => {
    const crowded = [...dayItems(200, addDays(DAY, -1)), ...dayItems(50)];
    const knowledge = checked(proved({ headMs: null, order: 'oldest-first', instants: 'honoured' }));
    knowledge.proofs = 12;
    const { day } = fetchDay(knowledge, server(crowded, 'ignored', 'oldest-first'));
    expect(day.truncated).toBe(false);
    expect(ids(day.onDay)).toEqual(ids(crowded.filter((item) => item.dt.startsWith(DAY))));
  });

  it('newest first or in no order, a later day never asks the whole day again', () => {
    for (const order of ['newest-first', 'shuffled'] as const) {
      const knowledge: ResourceKnowledge = {
        ...checked(proved({ order: order === 'shuffled' ? 'unordered' : order, instants: 'honoured' })),
        instantsProbed: true,
      };
      const { asked, day } = fetchDay(knowledge, server(data, 'honoured', order));
      expect(asked).not.toContain('2026-03-09T23:59:59.999Z..2026-03-11T00:00:00.000Z');
      expect(day.truncated).toBe(false);
      expect(ids(day.onDay)).toEqual(ids(theDay));
    }
  });
});

describe('a day above the cap whose item moves upstream while it is read in slices', () => {
  it('is flagged after a few slices more, and the run keeps instants honoured', () => {
    // An item held from the day's own answer moves to another hour before the slice around it is
    // asked: every slice around its old instant lacks it, as a cut one would. The day cannot be
    // proved whole. A cap cuts every answer at its own size: a smaller slice that lacks it again
    // ends the day's slices. Before, the first such answer was taken for instants dropped, and
    // every later day of the run was flagged unread.
    const data = [...dayItems(20, addDays(DAY, -1)), ...dayItems(730), ...dayItems(20, addDays(DAY, 1))];
    const knowledge = checked(proved({ order: 'unordered' }));
    const serve = server(data, 'honoured', 'shuffled');
    let answers = 0;
    let moved: string | undefined;
    const { day } = fetchDay(knowledge, (step) => {
      const answer = serve(step);
      answers += 1;
      if (answers === 1 && answer.kind === 'items') {
        // Moved twelve hours on, within the day, after the day's first answer showed it.
        const shown = answer.items.find((item) => (item as Item).dt < `${DAY}T12`) as Item;
        const at = data.findIndex((other) => other.id === shown.id);
        moved = shown.id;
        data[at] = { id: shown.id, dt: new Date(Date.parse(shown.dt) + 12 * 3_600_000).toISOString() };
      }
      return answer;
    });
    expect(moved).toBeDefined();
    expect(day.truncated).toBe(true);
    expect(knowledge.reading.instants).toBe('honoured');
    // The first slice that lacked it may have been a cap's cut; the smaller ones after it not.
    expect(knownCaps(knowledge.reading).filter((size) => size < CAP)).toHaveLength(1);
    // Read on in slices down to a second, the day would cost about twice as many.
    expect(day.requests).toBeLessThanOrEqual(25);
  });
});

describe("a day above the cap whose request may not serve the UTC day: the answer's own span counts", () => {
  const HOUR = 3_600_000;
  const data = [...dayItems(300, addDays(DAY, -1)), ...dayItems(300), ...dayItems(300, addDays(DAY, 1))];
  const theDay = data.filter((item) => item.dt.startsWith(DAY));
  const later = (knowledge: ResourceKnowledge): ResourceKnowledge => ({
    ...knowledge,
    reading: { ...knowledge.reading, instants: 'honoured' },
    instantsProbed: true,
  });

  it('a server whose day moved 5 h later since it was learned: the hours before its answer are asked too', () => {
    const knowledge = later(checked(proved({ order: 'oldest-first' })));
    const { asked, day } = fetchDay(knowledge, server(data, 'honoured', 'oldest-first', undefined, 5 * HOUR));
    expect(asked[1]).toMatch(/^2026-03-09T23:59:59\.999Z\.\.2026-03-10T05:/);
    expect(day.truncated).toBe(false);
    expect(ids(day.onDay)).toEqual(ids(theDay));
    // Its edge held items: this run's day answers are not taken as UTC days.
    expect(knowledge.dayAnswersAligned).toBe(false);
  });

  it('on a UTC server, one empty edge a run: later days take their answer from midnight on', () => {
    const late = data.filter((item) => !item.dt.startsWith(`${DAY}T00:0`));
    const knowledge = later(checked(proved({ order: 'oldest-first' })));
    const first = fetchDay(knowledge, server(late, 'honoured', 'oldest-first'));
    expect(first.asked[1]).toBe('2026-03-09T23:59:59.999Z..2026-03-10T00:19:12.000Z');
    expect(knowledge.dayAnswersAligned).toBe(true);
    const again = fetchDay(knowledge, server(late, 'honoured', 'oldest-first'));
    expect(again.day.requests).toBe(first.day.requests - 1);
    expect(ids(again.day.onDay)).toEqual(ids(late.filter((item) => item.dt.startsWith(DAY))));
  });

  it('an edge of an hour or more is asked on every day all the same: a rolling deploy answers both readings', () => {
    const late = data.filter((item) => !item.dt.startsWith(`${DAY}T00:`));
    const knowledge = later(checked(proved({ order: 'oldest-first' })));
    const first = fetchDay(knowledge, server(late, 'honoured', 'oldest-first'));
    expect(first.asked[1]).toBe('2026-03-09T23:59:59.999Z..2026-03-10T01:07:12.000Z');
    expect(knowledge.dayAnswersAligned).toBe(true);
    // The next day's answer came from the old reading, 5 h later: its hours before are asked.
    const again = fetchDay(knowledge, server(data, 'honoured', 'oldest-first', undefined, 5 * HOUR));
    expect(again.asked[1]).toMatch(/^2026-03-09T23:59:59\.999Z\.\.2026-03-10T05:/);
    expect(again.day.truncated).toBe(false);
    expect(ids(again.day.onDay)).toEqual(ids(theDay));
  });
});

describe('a day above the cap, where the server does not honour instants', () => {
  const data = [...dayItems(20, addDays(DAY, -1)), ...dayItems(300), ...dayItems(20, addDays(DAY, 1))];

  for (const instants of ['ignored', 'refused'] as const)
    for (const order of ['oldest-first', 'newest-first', 'shuffled'] as const)
      it(`${instants}, ${order}: one request more than the day alone, and the day stays truncated`, () => {
        const knowledge = checked(proved({ order: order === 'shuffled' ? 'unordered' : order }));
        const { day } = fetchDay(knowledge, server(data, instants, order));
        expect(day).toMatchObject({ truncated: true, requests: 2 });
        expect(knowledge.reading.instants).toBe(instants);
        expect(knowledge.instantsProbed).toBe(true);
      });

  it('asks only once a run: a later day costs nothing more', () => {
    const knowledge = checked(proved({ order: 'newest-first' }));
    fetchDay(knowledge, server(data, 'ignored', 'newest-first'));
    const { day } = fetchDay(knowledge, server(data, 'ignored', 'newest-first'));
    expect(day).toMatchObject({ truncated: true, requests: 1 });
  });

  it('a stored honoured that no longer holds is found out by the probe: the server changed its reading, which is learned again, and the day stays truncated', () => {
    const knowledge = checked(proved({ order: 'oldest-first', instants: 'honoured' }));
    const { day, asked } = fetchDay(knowledge, server(data, 'ignored', 'oldest-first'));
    expect(day.truncated).toBe(true);
    expect(knowledge.relearned).toBe(1);
    expect(knowledge.reading.instants).toBe('ignored');
    // The day asked again with its neighbours, narrowed by what this run's answers prove, then the
    // two halves of that request, each alone (the enddate not yet proved inclusive again).
    expect(asked.slice(2)).toEqual([
      '2026-03-08..2026-03-12',
      '2026-03-09..2026-03-12',
      '2026-03-10..2026-03-12',
      '2026-03-10..2026-03-11',
      '2026-03-11..2026-03-12',
    ]);
  });

  it('while another window probes, waits for its verdict', () => {
    const knowledge: ResourceKnowledge = { ...checked(proved()), instantsProbed: true };
    const release = claimVerdict(knowledge, 'instants');
    const probing = knowledge.pending?.instants;
    const plan = planDay(newDayFetch('feedback', DAY, POLICY, knowledge));
    plan.next();
    expect(plan.next({ kind: 'items', items: dayItems(CAP) }).value).toEqual({
      kind: 'wait',
      until: probing,
    });
    knowledge.reading.instants = 'refused';
    release();
    expect(knowledge.pending?.instants).toBeUndefined();
    const last = plan.next({ kind: 'waited' });
    expect(last.done && last.value).toMatchObject({ truncated: true, requests: 1 });
  });

  it('a probe that fails is left for another window to make', () => {
    const knowledge = checked(proved());
    const plan = planDay(newDayFetch('feedback', DAY, POLICY, knowledge));
    plan.next();
    plan.next({ kind: 'items', items: dayItems(CAP) });
    const broken = new ApiError('HTTP 503', { status: 503 }, { retryable: true });
    expect(() => plan.next({ kind: 'failed', error: broken })).toThrow(broken);
    expect(knowledge.instantsProbed).toBe(false);
    expect(knowledge.pending?.instants).toBeUndefined();
  });
});

describe('a quiet day under a reading learned by an earlier run, where instants were honoured', () => {
  const quiet = [
    { id: 'early', dt: `${DAY}T02:00:00.000Z` },
    { id: 'late', dt: `${DAY}T10:00:00.000Z` },
  ];

  it('is checked against its UTC day asked with instants: one request more, and the day whole', () => {
    const knowledge = checked(proved({ order: 'oldest-first', instants: 'honoured' }));
    const { day, asked } = fetchDay(knowledge, server(quiet, 'honoured', 'oldest-first'));
    expect(asked).toEqual([`${DAY}..${DAY}`, '2026-03-09T23:59:59.999Z..2026-03-11T00:00:00.000Z']);
    expect(day.truncated).toBe(false);
    expect(knowledge.relearned ?? 0).toBe(0);
  });

  it('a server whose day moved 5 h later: the hours the day request missed prove the reading changed', () => {
    const knowledge = checked(proved({ order: 'oldest-first', instants: 'honoured' }));
    const { day } = fetchDay(knowledge, server(quiet, 'honoured', 'oldest-first', undefined, 5 * 3_600_000));
    expect(ids(day.onDay)).toEqual(new Set(['early', 'late']));
    expect(day.truncated).toBe(false);
    expect(knowledge.relearned).toBe(1);
  });

  for (const instants of ['ignored', 'refused'] as const)
    it(`instants now ${instants}: the reading is learned again, the day asked with its neighbours`, () => {
      const knowledge = checked(proved({ order: 'oldest-first', instants: 'honoured' }));
      // An item the day before, which a server dropping the time serves for the instants asked.
      const data = [{ id: 'before', dt: '2026-03-09T12:00:00.000Z' }, ...quiet];
      const { day } = fetchDay(knowledge, server(data, instants, 'oldest-first', undefined, 5 * 3_600_000));
      expect(knowledge.reading.instants).toBe(instants);
      expect(knowledge.relearned).toBe(1);
      expect(ids(day.onDay)).toEqual(new Set(['early', 'late']));
    });
});
