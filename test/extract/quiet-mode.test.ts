import { describe, expect, it } from 'vitest';
import { newDayFetch, planDay } from '../../src/extract/day-plan.js';
import type { Answer, LimitPolicy, ResourceKnowledge } from '../../src/extract/plan-steps.js';
import {
  disagrees,
  keptAnswer,
  lacksHeld,
  QUIET_MOST,
  quietAnswer,
  runRequest,
  widestRequest,
} from '../../src/extract/quiet-mode.js';
import { emptyReading, type ServerReading } from '../../src/extract/server-reading.js';
import { addDays, type DayString } from '../../src/time/days.js';

const DAY = '2026-03-10';
const DAY_MS = 86_400_000;
const POLICY: LimitPolicy = { limit: 1000, maxLimit: 4000 };

/**
 * A reading learned before: inclusive bounds on UTC days, so the day is asked alone; answers of up
 * to 500 items seen (a small one is not suspected of a cap).
 */
function provedUtc(): ServerReading {
  return { ...emptyReading(), headMs: 60_000, tailMs: DAY_MS - 60_000, largestResponse: 500 };
}

const item = (id: string, dt: string) => ({ id, dt });
const items = (list: unknown[]): Answer => ({ kind: 'items', items: list });
const oneDay = (day: DayString) => ({ startdate: day, enddate: day });

function start(knowledge: ResourceKnowledge, day = DAY) {
  const plan = planDay(newDayFetch('feedback', day, POLICY, knowledge));
  return { plan, first: plan.next() };
}

describe('quiet mode, decisions', () => {
  it('a whole answer is quiet when small and well under our limit and a proved cap', () => {
    expect(quietAnswer(3, 1000, emptyReading())).toBe(true);
    expect(quietAnswer(QUIET_MOST, 1000, emptyReading())).toBe(true);
    expect(quietAnswer(QUIET_MOST + 1, 1000, emptyReading())).toBe(false);
    // A limit stepped down below a server maximum, or a cap: half of it at most.
    expect(quietAnswer(15, 31, emptyReading())).toBe(true);
    expect(quietAnswer(16, 31, emptyReading())).toBe(false);
    expect(quietAnswer(15, 1000, { ...emptyReading(), cap: 30 })).toBe(false);
  });

  it('the run asks the widest request for a day in quiet mode, the narrowest the reading allows otherwise', () => {
    expect(widestRequest(DAY)).toEqual({ startdate: addDays(DAY, -2), enddate: addDays(DAY, 2) });
    expect(runRequest(DAY, { reading: provedUtc() })).toEqual(oneDay(DAY));
    expect(runRequest(DAY, { reading: provedUtc(), quiet: false })).toEqual(oneDay(DAY));
    expect(runRequest(DAY, { reading: provedUtc(), quiet: true })).toEqual(widestRequest(DAY));
  });

  it("two answers disagree with a reading when one lacks an item of the other's that the reading says it holds", () => {
    // The reading says (D, D) holds D from 00:00 to 24:00 UTC; the server now starts its days at 05:00 UTC.
    const early = item('a', `${DAY}T02:00:00.000Z`);
    const later = item('b', `${DAY}T12:00:00.000Z`);
    const narrow = keptAnswer(oneDay(DAY), [later]);
    const wide = keptAnswer(widestRequest(DAY), [early, later]);
    expect(lacksHeld(provedUtc(), narrow, wide)).toBe(true);
    expect(lacksHeld(provedUtc(), wide, narrow)).toBe(false);
    expect(disagrees(provedUtc(), wide, [narrow])).toBe(true);
    expect(disagrees(provedUtc(), narrow, [wide])).toBe(true);
    // A reading that claims nothing of the narrow request's edges cannot be proved stale by them.
    expect(disagrees(emptyReading(), narrow, [wide])).toBe(false);
    // Items both hold agree with any reading.
    expect(disagrees(provedUtc(), narrow, [keptAnswer(widestRequest(DAY), [later])])).toBe(false);
  });
});

describe('quiet mode, in the day plan', () => {
  const quietDay = [item('x', `${DAY}T10:00:00.000Z`)];

  it('a check whose widest answer is small puts the run in quiet mode: later days ask the widest request', () => {
    const knowledge: ResourceKnowledge = { reading: provedUtc() };
    const { plan } = start(knowledge);
    expect(plan.next(items(quietDay)).value).toMatchObject({ kind: 'ask', range: widestRequest(DAY) });
    const last = plan.next(items(quietDay));
    expect(last.done && last.value.onDay).toEqual(quietDay);
    expect(knowledge.quiet).toBe(true);
    const next = addDays(DAY, 1);
    expect(start(knowledge, next).first.value).toMatchObject({ kind: 'ask', range: widestRequest(next) });
  });

  it('a day asked narrow while the run went quiet is asked again with the widest request, and holds the hours the narrow one lost', () => {
    const knowledge: ResourceKnowledge = { reading: provedUtc(), staleChecked: true };
    const { plan } = start(knowledge);
    knowledge.quiet = true;
    expect(plan.next(items([])).value).toMatchObject({ kind: 'ask', range: widestRequest(DAY) });
    const lost = item('y', `${DAY}T02:00:00.000Z`);
    const last = plan.next(items([lost]));
    expect(last.done && last.value.onDay).toEqual([lost]);
  });

  it('a writer that trusts the run check made elsewhere asks the widest request once, when its first answer is small', () => {
    const knowledge: ResourceKnowledge = { reading: provedUtc(), staleChecked: true };
    const { plan } = start(knowledge);
    expect(plan.next(items(quietDay)).value).toMatchObject({ kind: 'ask', range: widestRequest(DAY) });
    expect(plan.next(items(quietDay)).done).toBe(true);
    expect(knowledge.quiet).toBe(true);
    expect(knowledge.staleChecked).toBe(true);
  });

  it('on a busy source nothing changes: a trusting writer with a large first answer settles on it', () => {
    const busy = Array.from({ length: QUIET_MOST + 1 }, (_, i) =>
      item(`b${i}`, new Date(Date.parse(`${DAY}T01:00:00.000Z`) + i * 60_000).toISOString()),
    );
    const knowledge: ResourceKnowledge = {
      reading: provedUtc(),
      staleChecked: true,
    };
    const { plan } = start(knowledge);
    const last = plan.next(items(busy));
    expect(last.done && last.value.requests).toBe(1);
    expect(knowledge.quiet).toBe(false);
  });

  it('a check whose widest answer is large or may be cut leaves the run out of quiet mode', () => {
    const knowledge: ResourceKnowledge = { reading: provedUtc() };
    const { plan } = start(knowledge, DAY);
    plan.next(items(quietDay));
    const many = Array.from({ length: QUIET_MOST + 1 }, (_, i) =>
      item(`m${i}`, new Date(Date.parse(`${addDays(DAY, -1)}T01:00:00.000Z`) + i * 60_000).toISOString()),
    );
    expect(plan.next(items([...many, ...quietDay])).done).toBe(true);
    expect(knowledge.quiet).toBe(false);
  });

  it('a widest answer that may be cut ends quiet mode for the run: the day is asked narrow again', () => {
    const knowledge: ResourceKnowledge = {
      reading: provedUtc(),
      staleChecked: true,
      quiet: true,
    };
    const { plan, first } = start(knowledge);
    expect(first.value).toMatchObject({ range: widestRequest(DAY) });
    const full = Array.from({ length: 1000 }, (_, i) =>
      item(`f${i}`, new Date(Date.parse(`${addDays(DAY, -2)}T00:00:00.000Z`) + i * 60_000).toISOString()),
    );
    expect(plan.next(items(full)).value).toMatchObject({ kind: 'ask', range: oneDay(DAY), limit: 1000 });
    expect(knowledge.quiet).toBe(false);
  });

  it("widest answers of two days that disagree with the reading prove it stale, on items of neither day's own", () => {
    // The server now reads startdate as exclusive on days 5 h behind UTC: (a, b) serves a+1 05:00
    // to b+1 05:00 UTC, where the stored reading says a 00:00 to b+1 00:00.
    const knowledge: ResourceKnowledge = { reading: provedUtc(), staleChecked: true, quiet: true };
    const before = addDays(DAY, -2);
    const edge = item('e', `${before}T03:00:00.000Z`);
    // The widest request for D-2 (D-4..D) holds it.
    expect(start(knowledge, before).plan.next(items([edge])).done).toBe(true);
    expect(knowledge.relearned).toBeUndefined();
    // The one for D (D-2..D) lacks it, though the stored reading says D-2 is held whole; asked
    // again, D-2's request still holds it: stale.
    const { plan } = start(knowledge, DAY);
    expect(plan.next(items([])).value).toMatchObject({ kind: 'ask', range: widestRequest(before) });
    const again = plan.next(items([edge]));
    expect(knowledge.relearned).toBe(1);
    expect(knowledge.quiet).toBe(false);
    // D held none of its own items: an empty answer never settles a day alone, it is asked again.
    expect(again.value).toMatchObject({ kind: 'ask' });
    // The server as it is now: the request for D-2 (D-4..D) holds the edge item, no other does.
    const served = (range: { startdate: string }) =>
      items(range.startdate === addDays(before, -2) ? [edge] : []);
    let step = plan.next(items([]));
    for (let asks = 0; !step.done && asks < 6; asks++)
      step = plan.next(served((step.value as { range: { startdate: string } }).range));
    expect(step.done).toBe(true);
  });

  it('an item that arrives between two widest answers costs one request again, not a reading learned again', () => {
    const knowledge: ResourceKnowledge = { reading: provedUtc(), staleChecked: true, quiet: true };
    const before = addDays(DAY, -2);
    // D-2's widest request (D-4..D) is answered before the item of D-1 12:00 exists.
    expect(start(knowledge, before).plan.next(items([])).done).toBe(true);
    const arrived = item('n', `${addDays(DAY, -1)}T12:00:00.000Z`);
    // D's (D-2..D+2) holds it, where the reading says D-2's request held D-1 whole: the older
    // request is asked again, now holds it too, and the reading stands.
    const { plan } = start(knowledge, DAY);
    expect(plan.next(items([arrived])).value).toMatchObject({ kind: 'ask', range: widestRequest(before) });
    const last = plan.next(items([arrived]));
    expect(last.done && last.value.requests).toBe(2);
    expect(knowledge.relearned).toBeUndefined();
    expect(knowledge.quiet).toBe(true);
    expect(knowledge.reading).toEqual(provedUtc());
    // Asked once more, the fresh answer stands for D-2's: a third day agreeing with both asks nothing again.
    const after = addDays(DAY, 1);
    expect(start(knowledge, after).plan.next(items([arrived])).done).toBe(true);
  });

  it("an item without a readable dt ends quiet mode: the day is asked narrow, so a neighbour's undated item is not counted against it", () => {
    const knowledge: ResourceKnowledge = { reading: provedUtc(), staleChecked: true, quiet: true };
    const { plan, first } = start(knowledge);
    expect(first.value).toMatchObject({ range: widestRequest(DAY) });
    const undated = { id: 'u' };
    expect(plan.next(items([...quietDay, undated])).value).toMatchObject({ kind: 'ask', range: oneDay(DAY) });
    expect(knowledge.quiet).toBe(false);
    const last = plan.next(items(quietDay));
    expect(last.done && last.value.onDay).toEqual(quietDay);
  });

  it('a widest answer another window ended quiet mode under settles the day only once its own request held its undated items', () => {
    const knowledge: ResourceKnowledge = { reading: provedUtc(), staleChecked: true, quiet: true };
    const { plan, first } = start(knowledge);
    expect(first.value).toMatchObject({ range: widestRequest(DAY) });
    // Ended while the widest request was out: its answer is judged as a narrow one's, and holds the day.
    knowledge.quiet = false;
    const undated = { id: 'u' };
    expect(plan.next(items([...quietDay, undated])).value).toMatchObject({ kind: 'ask', range: oneDay(DAY) });
    const last = plan.next(items([...quietDay, undated]));
    expect(last.done && last.value.onDay).toEqual([...quietDay, undated]);
  });

  it('a check whose widest answer holds an undated item leaves the run out of quiet mode', () => {
    const knowledge: ResourceKnowledge = { reading: provedUtc() };
    const { plan } = start(knowledge);
    plan.next(items(quietDay));
    expect(plan.next(items([...quietDay, { id: 'u' }])).done).toBe(true);
    expect(knowledge.quiet).toBe(false);
  });
});
