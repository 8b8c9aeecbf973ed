import { describe, expect, it } from 'vitest';
import { ApiError } from '../../src/errors.js';
import { judge, newDayFetch, planDay, sessionOf } from '../../src/extract/day-plan.js';
import type { LimitPolicy, ResourceKnowledge } from '../../src/extract/fetch-day.js';
import { itemIdentity } from '../../src/extract/item-identity.js';
import { escalation, hintedStartLimit, startLimit, stepDown } from '../../src/extract/limit-steps.js';
import { type Answer, claimVerdict } from '../../src/extract/plan-steps.js';
import { checkVerdict } from '../../src/extract/reading-check.js';
import { stretchOf } from '../../src/extract/reading-session.js';
import {
  emptyReading,
  learnedThisRun,
  type ServerReading,
  startFrom,
} from '../../src/extract/server-reading.js';
import { addDays, type DayString } from '../../src/time/days.js';

// The day's plan is driven here by hand: each test feeds answers and reads the next request or
// the day's outcome, with no server and no client.

const DAY = '2026-03-10';
const DAY_MS = 86_400_000;
const POLICY: LimitPolicy = { limit: 1000, maxLimit: 4000 };

/** `count` items of `day`, oldest first, between 01:00 and 22:00 UTC (none near a midnight). */
function itemsOn(day: DayString, count: number, prefix = day): { id: string; dt: string }[] {
  const start = Date.parse(`${day}T01:00:00.000Z`);
  const step = count > 1 ? Math.floor((21 * 3_600_000) / (count - 1)) : 0;
  return Array.from({ length: count }, (_, i) => ({
    id: `${prefix}#${i}`,
    dt: new Date(start + i * step).toISOString(),
  }));
}

/** A reading proved before: inclusive bounds on UTC days, answers of up to 500 items seen. */
function provedUtc(extra: Partial<ServerReading> = {}): ServerReading {
  return { ...emptyReading(), headMs: 60_000, tailMs: DAY_MS - 60_000, largestResponse: 500, ...extra };
}

/**
 * Knowledge whose reading this run has already checked, on a source found not quiet: no check
 * request is spent.
 */
const checked = (reading: ServerReading): ResourceKnowledge => ({
  reading,
  staleChecked: true,
  quiet: false,
});

const items = (list: unknown[]): Answer => ({ kind: 'items', items: list });

function start(knowledge: ResourceKnowledge, policy = POLICY) {
  const plan = planDay(newDayFetch('feedback', DAY, policy, knowledge));
  return { plan, first: plan.next() };
}

describe('the day plan decides the next request from the answers fed to it', () => {
  it('on a reading it knows nothing of, asks two days on each side of the day with the policy limit', () => {
    const { first } = start({ reading: emptyReading() });
    expect(first.value).toEqual({
      kind: 'ask',
      range: { startdate: addDays(DAY, -2), enddate: addDays(DAY, 2) },
      limit: 1000,
    });
  });

  it('a whole answer to the one-day request of a proved, checked reading settles the day at once', () => {
    const { plan, first } = start(checked(provedUtc()));
    expect(first.value).toEqual({ kind: 'ask', range: { startdate: DAY, enddate: DAY }, limit: 1000 });
    const last = plan.next(items([...itemsOn(DAY, 10), ...itemsOn(addDays(DAY, 1), 0)]));
    expect(last.done).toBe(true);
    expect(last.value).toMatchObject({
      truncated: false,
      requests: 1,
      servedCount: 10,
      requestedLimit: 1000,
    });
    expect(last.done && last.value.onDay).toHaveLength(10);
  });

  it('starts at the longest stretch between proofs from a reading earlier runs stored, not from one another worker of this run stored', () => {
    const stretchFrom = (reading: ServerReading) => {
      const knowledge = checked(reading);
      const plan = planDay(newDayFetch('feedback', DAY, POLICY, knowledge));
      plan.next();
      return stretchOf(sessionOf(knowledge));
    };
    expect(stretchFrom(startFrom(provedUtc()))).toBe(64);
    const thisRuns = startFrom(provedUtc());
    learnedThisRun(thisRuns);
    expect(stretchFrom(thisRuns)).toBe(8);
  });

  it('records the answer a day settled on by its first and last item, for the run end to count answers at a size, not days', () => {
    const knowledge = checked(provedUtc());
    for (const [day, answer] of [
      [DAY, itemsOn(DAY, 12)],
      [addDays(DAY, 1), itemsOn(addDays(DAY, 1), 12)],
    ] as const) {
      const plan = planDay(newDayFetch('feedback', day, POLICY, knowledge));
      plan.next();
      expect(plan.next(items([...answer])).done).toBe(true);
    }
    const { settledOn, uncapped } = sessionOf(knowledge);
    const ends = (day: DayString) => {
      const answer = itemsOn(day, 12);
      return `${itemIdentity(answer[0])} ${itemIdentity(answer[11])}`;
    };
    expect(settledOn.get(DAY)).toBe(ends(DAY));
    expect(settledOn.get(addDays(DAY, 1))).toBe(ends(addDays(DAY, 1)));
    expect(uncapped.get(DAY)).toBe(12);
  });

  it('an answer as long as the limit is asked again, same range, four times the limit', () => {
    const { plan } = start(checked(provedUtc()));
    expect(plan.next(items(itemsOn(DAY, 1000))).value).toEqual({
      kind: 'ask',
      range: { startdate: DAY, enddate: DAY },
      limit: 4000,
    });
  });

  it('a 400 on the limit is asked again with half of it, and the refused limit is remembered', () => {
    const knowledge = checked(provedUtc());
    const { plan } = start(knowledge);
    const refused = new ApiError('HTTP 400', { status: 400 }, { retryable: false });
    expect(plan.next({ kind: 'failed', error: refused }).value).toEqual({
      kind: 'ask',
      range: { startdate: DAY, enddate: DAY },
      limit: 500,
    });
    expect(knowledge.reading.limitRefused).toBe(1000);
  });

  it('any other failure ends the plan with that error', () => {
    const { plan } = start(checked(provedUtc()));
    const broken = new ApiError('HTTP 503', { status: 503 }, { retryable: true });
    expect(() => plan.next({ kind: 'failed', error: broken })).toThrow(broken);
  });

  it('an answer at a proved cap on a one-day request leaves the day truncated once instants are known refused this run, with no request more', () => {
    const knowledge = { ...checked(provedUtc({ cap: 100, instants: 'refused' })), instantsProbed: true };
    const { plan } = start(knowledge);
    const last = plan.next(items(itemsOn(DAY, 100)));
    expect(last.done).toBe(true);
    expect(last.value).toMatchObject({ truncated: true, requests: 1 });
  });

  it('an answer as long as any before it is checked for a silent cap with a request a week wider on each side', () => {
    const { plan } = start(checked(provedUtc({ largestResponse: 10 })));
    expect(plan.next(items(itemsOn(DAY, 10))).value).toEqual({
      kind: 'ask',
      range: { startdate: addDays(DAY, -7), enddate: addDays(DAY, 7) },
      limit: 1000,
    });
  });
});

describe('the day plan checks a stored reading once a run', () => {
  it('an answer smaller than one another window had back while it was out is not checked for a silent cap: that cap would have cut the other', () => {
    const knowledge = checked(provedUtc({ largestResponse: 0 }));
    const mine = planDay(newDayFetch('feedback', DAY, POLICY, knowledge));
    const other = planDay(newDayFetch('feedback', addDays(DAY, 1), POLICY, knowledge));
    mine.next();
    other.next();
    // The other window's answer, the run's largest, comes back first: it is checked itself.
    const otherNext = other.next(items(itemsOn(addDays(DAY, 1), 30)));
    expect(otherNext.value).toMatchObject({ kind: 'ask', range: { startdate: addDays(DAY, -6) } });
    const last = mine.next(items(itemsOn(DAY, 10)));
    expect(last.done).toBe(true);
    expect(last.value).toMatchObject({ truncated: false, requests: 1, servedCount: 10 });
  });

  it('a whole answer under a reading not yet checked this run is followed by the request that holds the day under every reading', () => {
    const knowledge: ResourceKnowledge = { reading: provedUtc() };
    const { plan } = start(knowledge);
    expect(plan.next(items(itemsOn(DAY, 10))).value).toEqual({
      kind: 'ask',
      range: { startdate: addDays(DAY, -2), enddate: addDays(DAY, 2) },
      limit: 1000,
    });
    // The wide answer holds the same items of the day: the reading holds, for the whole run.
    const last = plan.next(items(itemsOn(DAY, 10)));
    expect(last.done).toBe(true);
    expect(last.value).toMatchObject({ truncated: false, requests: 2 });
    expect(knowledge.staleChecked).toBe(true);
    expect(knowledge.relearned).toBeUndefined();
  });

  it('a wide answer holding items of the day that the narrow one lacked resets the reading and asks again', () => {
    const knowledge: ResourceKnowledge = { reading: provedUtc() };
    const { plan } = start(knowledge);
    plan.next(items(itemsOn(DAY, 10)));
    const next = plan.next(items([...itemsOn(DAY, 10), ...itemsOn(DAY, 3, 'missed')]));
    expect(knowledge.relearned).toBe(1);
    expect(next.done).toBe(false);
    expect(next.value).toMatchObject({ kind: 'ask' });
    const range = next.done || next.value.kind !== 'ask' ? undefined : next.value.range;
    // Learned again from the wide answer alone: no longer the one day the old reading asked.
    expect(range).not.toEqual({ startdate: DAY, enddate: DAY });
  });

  it('a wide answer cut by a busy neighbour still proves the reading stale by an item of the day the narrow one lacked', () => {
    const knowledge: ResourceKnowledge = { reading: provedUtc() };
    const { plan } = start(knowledge, { limit: 20, maxLimit: 20 });
    plan.next(items(itemsOn(DAY, 10)));
    // 20 items at a limit of 20: cut, yet every item in it was served.
    const wide = [...itemsOn(DAY, 10), ...itemsOn(DAY, 3, 'missed'), ...itemsOn(addDays(DAY, 1), 7)];
    const next = plan.next(items(wide));
    expect(knowledge.relearned).toBe(1);
    expect(next.done).toBe(false);
  });

  it('a cut wide answer that shows nothing wrong leaves the check to a later day of the run', () => {
    const knowledge: ResourceKnowledge = { reading: provedUtc() };
    const { plan } = start(knowledge, { limit: 20, maxLimit: 20 });
    plan.next(items(itemsOn(DAY, 10)));
    const last = plan.next(items([...itemsOn(DAY, 10), ...itemsOn(addDays(DAY, 1), 10)]));
    expect(last.done).toBe(true);
    expect(last.value).toMatchObject({ truncated: false, requests: 2 });
    expect(knowledge.staleChecked).toBe(false);
    expect(knowledge.relearned).toBeUndefined();
  });

  it("reads the cap check's week-wide answer, listed by dt from before the widest request to after it and too full for a quiet source, instead of asking the widest request", () => {
    const knowledge: ResourceKnowledge = {
      reading: provedUtc({ largestResponse: 10, order: 'oldest-first' }),
    };
    const { plan } = start(knowledge);
    const day = itemsOn(DAY, 50);
    expect(plan.next(items(day)).value).toMatchObject({
      range: { startdate: addDays(DAY, -7), enddate: addDays(DAY, 7) },
    });
    const week = [-4, -3, -2, -1, 0, 1, 2, 3, 4].flatMap((offset) =>
      offset === 0 ? day : itemsOn(addDays(DAY, offset), 50),
    );
    const last = plan.next(items(week));
    expect(last.done).toBe(true);
    expect(last.value).toMatchObject({ truncated: false, requests: 2 });
    expect(knowledge.staleChecked).toBe(true);
    expect(knowledge.quiet).toBe(false);
    expect(knowledge.relearned).toBeUndefined();
  });

  // A site's first day: nothing before it, so no answer runs from before the widest request. Listed
  // by dt, a cut drops the far end of the order only: an answer past the day on that side holds it.
  it.each([
    ['oldest first, its last item after the widest request', 'oldest-first' as const],
    ['newest first, its last item before the widest request', 'newest-first' as const],
  ])("reads the cap check's week-wide answer with nothing on one side of the day (%s)", (_, order) => {
    const knowledge: ResourceKnowledge = { reading: provedUtc({ largestResponse: 10, order }) };
    const { plan } = start(knowledge);
    const listed = (answer: unknown[]) => (order === 'newest-first' ? [...answer].reverse() : answer);
    const day = itemsOn(DAY, 50);
    plan.next(items(listed(day)));
    const side = order === 'oldest-first' ? [1, 2, 3, 4] : [-4, -3, -2, -1];
    const others = side.flatMap((offset) => itemsOn(addDays(DAY, offset), 50));
    const week = order === 'oldest-first' ? [...day, ...others] : [...others, ...day];
    const last = plan.next(items(listed(week)));
    expect(last.done).toBe(true);
    expect(last.value).toMatchObject({ truncated: false, requests: 2 });
    expect(knowledge.staleChecked).toBe(true);
    expect(knowledge.relearned).toBeUndefined();
  });

  it("judges a source quiet by the week-wide answer's items on the widest request's days: 20 a day is not quiet (60 there)", () => {
    const knowledge: ResourceKnowledge = {
      reading: provedUtc({ largestResponse: 10, order: 'oldest-first' }),
    };
    const { plan } = start(knowledge);
    const day = itemsOn(DAY, 20);
    plan.next(items(day));
    const after = [1, 2, 3, 4].flatMap((offset) => itemsOn(addDays(DAY, offset), 20));
    const last = plan.next(items([...day, ...after]));
    expect(last.done).toBe(true);
    expect(last.value).toMatchObject({ truncated: false, requests: 2 });
    expect(knowledge.quiet).toBe(false);
  });

  it('asks the widest request where the week-wide answer, oldest first, stops inside it: a cut may have dropped the rest', () => {
    const knowledge: ResourceKnowledge = {
      reading: provedUtc({ largestResponse: 10, order: 'oldest-first' }),
    };
    const { plan } = start(knowledge);
    const day = itemsOn(DAY, 50);
    plan.next(items(day));
    const before = [-4, -3, -2, -1].flatMap((offset) => itemsOn(addDays(DAY, offset), 50));
    const next = plan.next(items([...before, ...day, ...itemsOn(addDays(DAY, 1), 50)]));
    expect(next.done).toBe(false);
    expect(next.value).toEqual({
      kind: 'ask',
      range: { startdate: addDays(DAY, -2), enddate: addDays(DAY, 2) },
      limit: 1000,
    });
  });

  it('reads the week-wide answer when it is smaller than an answer the run had: any cap lies above it, so it was not cut', () => {
    const knowledge: ResourceKnowledge = { reading: provedUtc({ largestResponse: 10 }) };
    const { plan } = start(knowledge);
    const day = itemsOn(DAY, 50);
    plan.next(items(day));
    knowledge.reading.largestResponse = 1000;
    const week = [-3, -2, -1, 1, 2, 3].flatMap((offset) => itemsOn(addDays(DAY, offset), 50));
    const last = plan.next(items([...day, ...week]));
    expect(last.done).toBe(true);
    expect(last.value).toMatchObject({ truncated: false, requests: 2 });
  });

  // A cap the run has not seen may lie between the widest answer's size and the week's: the week
  // answer is then cut, and a newest-first cut inside the day keeps only the day's late items,
  // all of which the narrow answer holds, while the early ones the stale reading misses are gone.
  it.each([
    ['in no order by dt', 'unordered' as const, false],
    ['newest first, cut inside the day', 'newest-first' as const, true],
  ])("asks the widest request where the week-wide answer may be a cap's cut (%s)", (_, order, sorted) => {
    const knowledge: ResourceKnowledge = { reading: provedUtc({ largestResponse: 10, order }) };
    const { plan } = start(knowledge);
    const day = itemsOn(DAY, 50);
    const late = day.slice(25);
    plan.next(items(sorted ? [...late].reverse() : late));
    const after = [1, 2, 3, 4, 5, 6, 7].flatMap((offset) => itemsOn(addDays(DAY, offset), 50));
    const cut = sorted ? [...after, ...late].reverse() : [...late, ...after];
    const next = plan.next(items(cut));
    expect(next.done).toBe(false);
    expect(next.value).toEqual({
      kind: 'ask',
      range: { startdate: addDays(DAY, -2), enddate: addDays(DAY, 2) },
      limit: 1000,
    });
    expect(knowledge.staleChecked).toBe(true);
  });

  it("a week-wide answer holding items of the day that the narrow one lacked proves the reading stale, as the widest one's would", () => {
    const knowledge: ResourceKnowledge = { reading: provedUtc({ largestResponse: 10 }) };
    const { plan } = start(knowledge);
    const day = itemsOn(DAY, 50);
    plan.next(items(day));
    const week = [-3, -1, 1, 3].flatMap((offset) => itemsOn(addDays(DAY, offset), 50));
    const next = plan.next(items([...day, ...itemsOn(DAY, 3, 'missed'), ...week]));
    expect(knowledge.relearned).toBe(1);
    expect(next.done).toBe(false);
    expect(next.value).toMatchObject({ kind: 'ask' });
  });

  it('on a quiet source, reads the week-wide answer listed past the day too, and quiet mode keeps it to compare, standing for the widest request', () => {
    const knowledge: ResourceKnowledge = { reading: provedUtc({ largestResponse: 1 }) };
    const { plan } = start(knowledge);
    const day = itemsOn(DAY, 5);
    plan.next(items(day));
    const last = plan.next(items([...day, ...itemsOn(addDays(DAY, 1), 5), ...itemsOn(addDays(DAY, 5), 40)]));
    expect(last.done).toBe(true);
    expect(last.value).toMatchObject({ truncated: false, requests: 2 });
    expect(knowledge.quiet).toBe(true);
    expect(knowledge.quietAnswers?.map((kept) => [kept.range, kept.standsFor])).toEqual([
      [{ startdate: DAY, enddate: DAY }, undefined],
      [
        { startdate: addDays(DAY, -7), enddate: addDays(DAY, 7) },
        { startdate: addDays(DAY, -2), enddate: addDays(DAY, 2) },
      ],
    ]);
  });

  /** A reading learned this run, whose probe proved instants honoured; `cutChecks` widest answers came back cut. */
  const probedThisRun = (cutChecks?: number): ResourceKnowledge => ({
    reading: provedUtc({ instants: 'honoured' }),
    storedReading: false,
    instantsProbed: true,
    ...(cutChecks === undefined ? {} : { cutChecks }),
  });
  const dayWithInstants = {
    startdate: `${addDays(DAY, -1)}T23:59:59.999Z`,
    enddate: `${addDays(DAY, 1)}T00:00:00.000Z`,
  };

  it("in a run whose probe proved instants honoured, the check after a cut one asks the day's UTC day with instants: whole there, the run's check is made", () => {
    const knowledge = probedThisRun(1);
    const { plan } = start(knowledge);
    expect(plan.next(items(itemsOn(DAY, 10))).value).toMatchObject({ kind: 'ask', range: dayWithInstants });
    const last = plan.next(items(itemsOn(DAY, 10)));
    expect(last.done).toBe(true);
    expect(last.value).toMatchObject({ truncated: false, requests: 2 });
    expect(knowledge.staleChecked).toBe(true);
    expect(knowledge.relearned).toBeUndefined();
  });

  it('the UTC day asked with instants holding items of the day the narrow answer lacked proves the reading stale', () => {
    const knowledge = probedThisRun(1);
    const { plan } = start(knowledge);
    plan.next(items(itemsOn(DAY, 10)));
    const next = plan.next(items([...itemsOn(DAY, 10), ...itemsOn(DAY, 3, 'missed')]));
    expect(knowledge.relearned).toBe(1);
    expect(next.done).toBe(false);
  });

  it('before any widest answer came back cut, the check asks the widest request, which also tells whether the source is quiet', () => {
    const { plan } = start(probedThisRun());
    expect(plan.next(items(itemsOn(DAY, 10))).value).toMatchObject({
      kind: 'ask',
      range: { startdate: addDays(DAY, -2), enddate: addDays(DAY, 2) },
    });
  });

  // The widest request, as large as any answer of the run, may be cut by a cap the run has not
  // seen: newest first, it keeps the neighbours after the day and the day's late items, which the
  // narrow answer under a stale reading holds; the day's early items it misses are gone from both.
  describe('a widest answer as large as any before it, whose items agree with the narrow answer', () => {
    const setUp = () => {
      const knowledge: ResourceKnowledge = {
        reading: provedUtc({ largestResponse: 60, order: 'newest-first' }),
      };
      const { plan } = start(knowledge);
      const late = itemsOn(DAY, 50).slice(25).reverse();
      const widest = plan.next(items(late));
      expect(widest.value).toMatchObject({
        range: { startdate: addDays(DAY, -2), enddate: addDays(DAY, 2) },
      });
      const after = [1, 2].flatMap((offset) => itemsOn(addDays(DAY, offset), 20)).reverse();
      const around = plan.next(items([...after, ...late]));
      expect(around.value).toMatchObject({
        kind: 'ask',
        range: { startdate: addDays(DAY, -9), enddate: addDays(DAY, 9) },
      });
      return { knowledge, plan, cut: [...after, ...late] };
    };

    it("asks a week wider on each side; the same size again leaves the run's check to a later day", () => {
      const { knowledge, plan, cut } = setUp();
      const last = plan.next(items(cut));
      expect(last.done).toBe(true);
      expect(knowledge.staleChecked).toBe(false);
    });

    it('a few items, no more a week wider: the source is not taken for quiet, its widest answers may all be cut', () => {
      const knowledge: ResourceKnowledge = {
        reading: provedUtc({ largestResponse: 5, order: 'newest-first' }),
      };
      const { plan } = start(knowledge);
      const late = itemsOn(DAY, 6).slice(3).reverse();
      plan.next(items(late));
      const cut = [...itemsOn(addDays(DAY, 1), 6).reverse(), ...late];
      expect(plan.next(items(cut)).value).toMatchObject({
        range: { startdate: addDays(DAY, -9), enddate: addDays(DAY, 9) },
      });
      expect(plan.next(items(cut)).done).toBe(true);
      expect(knowledge.quiet).toBe(false);
      expect(knowledge.staleChecked).toBe(false);
    });

    it('asks a week wider on each side; more items there prove the widest whole, and the check made', () => {
      const { knowledge, plan, cut } = setUp();
      const more = [...itemsOn(addDays(DAY, 8), 5), ...cut].sort((a, b) => b.dt.localeCompare(a.dt));
      const last = plan.next(items(more));
      expect(last.done).toBe(true);
      expect(knowledge.staleChecked).toBe(true);
    });
  });

  it('while another window checks the reading, waits for its verdict before settling, then settles on it', () => {
    const knowledge: ResourceKnowledge = { reading: provedUtc() };
    const release = claimVerdict(knowledge, 'reading');
    const checking = knowledge.pending?.reading;
    const { plan } = start(knowledge);
    expect(plan.next(items(itemsOn(DAY, 10))).value).toEqual({ kind: 'wait', until: checking });
    // The other window's check is done and found the reading sound, on a source not quiet.
    knowledge.staleChecked = true;
    knowledge.quiet = false;
    release();
    const last = plan.next({ kind: 'waited' });
    expect(last.done).toBe(true);
    expect(last.value).toMatchObject({ truncated: false, requests: 1 });
  });

  it('a check whose request fails is left for another window to make', () => {
    const knowledge: ResourceKnowledge = { reading: provedUtc() };
    const { plan } = start(knowledge);
    plan.next(items(itemsOn(DAY, 10)));
    expect(knowledge.pending?.reading).toBeInstanceOf(Promise);
    const broken = new ApiError('HTTP 503', { status: 503 }, { retryable: true });
    expect(() => plan.next({ kind: 'failed', error: broken })).toThrow(broken);
    expect(knowledge.staleChecked).toBe(false);
    expect(knowledge.pending?.reading).toBeUndefined();
  });
});

describe('checkVerdict', () => {
  const range = { startdate: DAY, enddate: DAY };
  const answer = itemsOn(DAY, 5);

  it('stale when the wide answer holds an item the narrow one should have held', () => {
    const wide = [...answer, ...itemsOn(DAY, 1, 'missed')];
    expect(checkVerdict({ day: DAY, reading: provedUtc(), range, answer, wide })).toBe('stale');
  });

  it("holds when every such item was there, the day's own among them", () => {
    expect(checkVerdict({ day: DAY, reading: provedUtc(), range, answer, wide: answer })).toBe('holds');
  });

  it('unproven when nothing the narrow answer should hold came back, or only other days did', () => {
    expect(checkVerdict({ day: DAY, reading: provedUtc(), range, answer: [], wide: [] })).toBe('unproven');
    // An inclusive enddate one day on: the narrow request claims the next day's items too.
    const twoDays = { startdate: DAY, enddate: addDays(DAY, 1) };
    const next = itemsOn(addDays(DAY, 1), 3);
    expect(checkVerdict({ day: DAY, reading: provedUtc(), range: twoDays, answer: next, wide: next })).toBe(
      'unproven',
    );
  });
});

/**
 * The limits a day's plan asks with, in order, of a server that refuses a limit above `maximum`
 * (HTTP 400) and whose day holds `size` items (an answer holds at most the limit).
 */
function limitsAsked(k: ResourceKnowledge, maximum: number, size: number): number[] {
  const plan = planDay(newDayFetch('feedback', DAY, POLICY, k));
  const refused: Answer = {
    kind: 'failed',
    error: new ApiError('HTTP 400', { status: 400 }, { retryable: false }),
  };
  const limits: number[] = [];
  let step = plan.next();
  for (let asked = 0; asked < 40 && !step.done; asked++) {
    const wanted = step.value;
    if (wanted.kind !== 'ask') break;
    limits.push(wanted.limit);
    step = plan.next(wanted.limit > maximum ? refused : items(itemsOn(DAY, Math.min(size, wanted.limit))));
  }
  return limits;
}

describe('limit steps', () => {
  const knowledge = (
    reading: Partial<ServerReading>,
    more: Partial<ResourceKnowledge> = {},
  ): ResourceKnowledge => ({
    reading: { ...emptyReading(), ...reading },
    ...more,
  });

  it('escalates fourfold up to the ceiling, then stops', () => {
    expect(escalation(1000, POLICY, knowledge({}))).toEqual({ limit: 4000, retriesRefused: false });
    expect(escalation(2000, POLICY, knowledge({}))).toEqual({ limit: 4000, retriesRefused: false });
    expect(escalation(4000, POLICY, knowledge({}))).toBeUndefined();
  });

  it('below a refused limit, tries one more than a round limit taken, else halves the gap, not spending the retry', () => {
    const k = knowledge({ limitRefused: 1000 }, { limitAccepted: 500 });
    expect(escalation(500, POLICY, k)).toEqual({ limit: 501, retriesRefused: false });
    expect(escalation(501, POLICY, { ...k, limitAccepted: 501 })).toEqual({
      limit: 750,
      retriesRefused: false,
    });
    expect(escalation(750, POLICY, { ...k, limitAccepted: 750 })).toEqual({
      limit: 751,
      retriesRefused: false,
    });
    expect(escalation(751, POLICY, { ...k, limitAccepted: 751 })).toEqual({
      limit: 875,
      retriesRefused: false,
    });
  });

  it('with no gap left below a refused limit, stops there, but retries the refused one once a run', () => {
    const k = knowledge({ limitRefused: 1000 }, { limitAccepted: 999 });
    expect(escalation(999, POLICY, k)).toEqual({ limit: 1000, retriesRefused: true });
    expect(escalation(999, POLICY, { ...k, refusedRetried: true })).toBeUndefined();
    // A refusal an earlier run stored: the limit just below it is the ceiling.
    expect(escalation(999, POLICY, knowledge({ limitRefused: 1000 }))).toEqual({
      limit: 1000,
      retriesRefused: true,
    });
  });

  it("finds a server's maximum between two halvings: the day's answer is asked at the maximum itself", () => {
    // The server takes at most 20: 1000 down to 31 refused, 15 taken; 16 (one more than a round
    // limit), 19 and 20 taken, 23 and 21 refused.
    const limits = limitsAsked(knowledge({}), 20, 20);
    const found = limits.indexOf(31);
    expect(limits.slice(0, found)).toEqual([1000, 500, 250, 125, 62]);
    // Then the run's one retry of the refused 21; whatever the day is asked after, it is asked at 20.
    expect(limits.slice(found, found + 9)).toEqual([31, 15, 16, 23, 19, 21, 20, 21, 20]);
    expect(new Set(limits.slice(found + 9))).toEqual(new Set([20]));
  });

  it('a limit the server took earlier in the run and refuses now is not climbed back to after each step down', () => {
    // The server took 500 (its maximum then) and now refuses it: a deploy lowered its maximum to 250.
    const k: ResourceKnowledge = { ...checked(provedUtc({ limitRefused: 1000 })), limitAccepted: 500 };
    const limits = limitsAsked(k, 250, 1000);
    // The first ask; 250 taken, a round limit, so one more, refused: the new maximum, found. Then
    // the run's one retry of it: never 500 again.
    const above = limits.filter((limit) => limit > 250);
    expect(above).toEqual([500, 251, 251]);
  });

  it('starts a day earlier runs stored many items of above them and a tenth more, within the ceiling', () => {
    expect(hintedStartLimit(0, POLICY, knowledge({}))).toBe(1000);
    expect(hintedStartLimit(900, POLICY, knowledge({}))).toBe(1000);
    // 950 and a tenth more would fill 1,000: an answer that long is asked again with 4,000.
    expect(hintedStartLimit(950, POLICY, knowledge({}))).toBe(4000);
    expect(hintedStartLimit(1500, POLICY, knowledge({}))).toBe(4000);
    expect(hintedStartLimit(50_000, POLICY, knowledge({}))).toBe(4000);
  });

  it("never starts a day at a limit the server refused, nor spends the run's one retry of it", () => {
    const k = knowledge({ limitRefused: 2000 }, { limitAccepted: 1000 });
    expect(hintedStartLimit(1500, POLICY, k)).toBe(1000);
    expect(k.refusedRetried).toBeUndefined();
  });

  it('steps down by half, or once a limit was taken, halfway down to it', () => {
    expect(stepDown(1000, knowledge({}))).toBe(500);
    expect(stepDown(1000, knowledge({}, { limitAccepted: 800 }))).toBe(900);
    expect(stepDown(801, knowledge({}, { limitAccepted: 800 }))).toBe(800);
  });

  it('starts below a refused limit', () => {
    expect(startLimit(POLICY, knowledge({}))).toBe(1000);
    expect(startLimit(POLICY, knowledge({ limitRefused: 1000 }))).toBe(500);
    expect(startLimit(POLICY, knowledge({ limitRefused: 1000 }, { limitAccepted: 700 }))).toBe(700);
  });

  it('judges an answer: at the limit, at a proved cap, as long as any before (a cap not yet seen), or whole', () => {
    expect(judge(1000, 0, 1000, emptyReading())).toBe('limit');
    expect(judge(100, 0, 1000, { ...emptyReading(), cap: 100 })).toBe('cap');
    expect(judge(50, 50, 1000, emptyReading())).toBe('suspect');
    expect(judge(49, 50, 1000, emptyReading())).toBe('complete');
    expect(judge(0, 0, 1000, emptyReading())).toBe('complete');
  });
});
