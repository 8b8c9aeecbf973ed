import { describe, expect, it } from 'vitest';
import { newDayFetch, planDay, sessionOf } from '../../src/extract/day-plan.js';
import type { Answer, LimitPolicy, ResourceKnowledge } from '../../src/extract/plan-steps.js';
import { widestRequest } from '../../src/extract/quiet-mode.js';
import { noteAnswer } from '../../src/extract/reading-session.js';
import { emptyReading, type ServerReading } from '../../src/extract/server-reading.js';
import { addDays } from '../../src/time/days.js';

/** A day is settled only under a proof of the reading: the day's plan, fed answers by hand. */

const DAY = '2026-03-10';
const DAY_MS = 86_400_000;
const POLICY: LimitPolicy = { limit: 1000, maxLimit: 4000 };

interface Range {
  startdate: string;
  enddate: string;
}

/** Inclusive bounds on UTC days, learned this run: each day is asked alone. */
function provedUtc(): ServerReading {
  return { ...emptyReading(), headMs: 60_000, tailMs: DAY_MS - 60_000, largestResponse: 500 };
}

const items = (list: unknown[]): Answer => ({ kind: 'items', items: list });
const dayItems = (count: number) =>
  Array.from({ length: count }, (_, i) => ({
    id: `f${i}`,
    dt: new Date(Date.parse(`${DAY}T00:00:00.000Z`) + i * 250_000).toISOString(),
  }));

/** An inclusive UTC server holding `count` items of the day: what a request's range covers of them. */
function serving(count: number) {
  return (step: { value: unknown }): Answer => {
    const { range } = step.value as { range: { startdate: string; enddate: string } };
    const from = Date.parse(`${range.startdate.slice(0, 10)}T00:00:00.000Z`);
    const to = Date.parse(`${range.enddate.slice(0, 10)}T00:00:00.000Z`) + DAY_MS;
    return items(dayItems(count).filter((item) => Date.parse(item.dt) >= from && Date.parse(item.dt) < to));
  };
}

function start(knowledge: ResourceKnowledge) {
  const plan = planDay(newDayFetch('feedback', DAY, POLICY, knowledge));
  return { plan, first: plan.next() };
}

describe('a day settled under the run’s proofs', () => {
  it('one transient empty answer settles nothing: the day is asked again and holds its items', () => {
    const knowledge: ResourceKnowledge = { reading: provedUtc(), staleChecked: true, quiet: false };
    const { plan, first } = start(knowledge);
    expect(first.value).toMatchObject({ kind: 'ask', range: { startdate: DAY, enddate: DAY } });
    // First the widest request: it holds the day's items, so the empty answer is not believed.
    const wide = plan.next(items([]));
    expect(wide.value).toMatchObject({ kind: 'ask', range: widestRequest(DAY) });
    const again = plan.next(items(dayItems(300)));
    expect(again.value).toMatchObject({ kind: 'ask', range: { startdate: DAY, enddate: DAY } });
    const done = plan.next(items(dayItems(300)));
    expect(done.done).toBe(true);
    expect(done.value).toMatchObject({ truncated: false });
    expect((done.value as { onDay: unknown[] }).onDay).toHaveLength(300);
  });

  /** A reading an earlier run stored, instants honoured: each settled day is checked by its UTC day. */
  const storedHonoured = (): ResourceKnowledge => ({
    reading: { ...provedUtc(), order: 'oldest-first', instants: 'honoured' },
    storedReading: true,
    staleChecked: true,
    quiet: false,
  });

  /** Answers every ask of the plan empty; the ranges it asked, each as `startdate..enddate`. */
  const allEmpty = (plan: ReturnType<typeof planDay>, first: IteratorResult<unknown, unknown>) => {
    const asked: string[] = [];
    let step = first;
    while (!step.done) {
      const { range } = step.value as { range: Range };
      asked.push(`${range.startdate}..${range.enddate}`);
      step = plan.next(items([]));
    }
    return { asked, fetched: step.value };
  };
  const own = `${DAY}..${DAY}`;
  const widest = `${widestRequest(DAY).startdate}..${widestRequest(DAY).enddate}`;
  /** The reading's check of a settled day by its UTC day (instants honoured, stored). */
  const byInstants = (asked: string[]) => asked.filter((range) => range.includes('T'));

  it('an empty day whose UTC day, asked with instants by the stored reading’s check, is empty too is settled on those two: nothing is asked again', () => {
    // No reading of bounds or zone explains an empty answer to the UTC day's instants away: the
    // widest request, its own again and the empty day's verdict would add nothing to it.
    const { plan, first } = start(storedHonoured());
    const { asked, fetched } = allEmpty(plan, first);
    expect(fetched).toMatchObject({ truncated: false });
    expect(asked.filter((range) => !range.includes('T'))).toEqual([own]);
    expect(byInstants(asked)).toHaveLength(1);
  });

  it('a transient empty answer to the day’s own request, its UTC day’s check holding its items: they are read, not settled empty', () => {
    const { plan, first } = start(storedHonoured());
    expect(first.value).toMatchObject({ kind: 'ask', range: { startdate: DAY, enddate: DAY } });
    // Own answer empty by a transient fault; every later request answered as the server holds it.
    let step = plan.next(items([]));
    while (!step.done) step = plan.next(serving(40)(step));
    expect(step.value).toMatchObject({ truncated: false });
    expect((step.value as { onDay: unknown[] }).onDay).toHaveLength(40);
  });

  /** A reading learned this run, whose probe proved instants honoured: no earlier run stored it. */
  const probedHonoured = (): ResourceKnowledge => ({
    ...storedHonoured(),
    storedReading: false,
    instantsProbed: true,
  });

  it('a first run that proved instants honoured asks an empty day’s UTC day with instants, not the widest request: empty too, the day is settled on the two', () => {
    // The widest request, beside busy days, comes back cut and proves nothing; the UTC day asked
    // with instants holds the day alone whatever the bounds and the zone.
    const { plan, first } = start(probedHonoured());
    const { asked, fetched } = allEmpty(plan, first);
    expect(fetched).toMatchObject({ truncated: false });
    expect(asked.filter((range) => !range.includes('T'))).toEqual([own]);
    expect(byInstants(asked)).toEqual(['2026-03-09T23:59:59.999Z..2026-03-11T00:00:00.000Z']);
  });

  it('a first run’s empty day whose reading check asked its UTC day with instants already is settled on that answer: it is not asked twice', () => {
    // The run's check still to make, after a widest answer came back cut: it asks the UTC day.
    const { plan, first } = start({ ...probedHonoured(), staleChecked: false, cutChecks: 1 });
    const { asked, fetched } = allEmpty(plan, first);
    expect(fetched).toMatchObject({ truncated: false });
    expect(asked.filter((range) => !range.includes('T'))).toEqual([own]);
    expect(byInstants(asked)).toEqual(['2026-03-09T23:59:59.999Z..2026-03-11T00:00:00.000Z']);
  });

  it('a first run’s empty day whose UTC day asked with instants holds its items: the reading is learned again and the items are read', () => {
    const { plan, first } = start(probedHonoured());
    expect(first.value).toMatchObject({ kind: 'ask', range: { startdate: DAY, enddate: DAY } });
    const check = plan.next(items([]));
    expect((check.value as { range: Range }).range.startdate).toContain('T');
    let step = plan.next(items(dayItems(40)));
    while (!step.done) step = plan.next(serving(40)(step));
    expect(step.value).toMatchObject({ truncated: false });
    expect((step.value as { onDay: unknown[] }).onDay).toHaveLength(40);
  });

  it('a first run that has not learned whether instants are honoured asks the widest request as before', () => {
    const knowledge = probedHonoured();
    const { plan, first } = start({
      ...knowledge,
      reading: { ...knowledge.reading, instants: null },
      instantsProbed: false,
    });
    const { asked } = allEmpty(plan, first);
    expect(asked[1]).toBe(widest);
  });

  it('a day settled empty before: the widest asked first and empty counts as its first empty answer', () => {
    const state = newDayFetch('feedback', DAY, POLICY, storedHonoured());
    state.emptyBefore = true;
    const plan = planDay(state);
    const { asked, fetched } = allEmpty(plan, plan.next());
    expect(fetched).toMatchObject({ truncated: false });
    expect(asked.filter((range) => !range.includes('T'))).toEqual([widest, own]);
    expect(byInstants(asked)).toHaveLength(1);
  });

  it('a transient empty answer to the widest request and the day’s own items: the items stand', () => {
    const state = newDayFetch('feedback', DAY, POLICY, storedHonoured());
    state.emptyBefore = true;
    const plan = planDay(state);
    plan.next();
    const own = plan.next(items([]));
    // The day's own answer holds its items: they are read, checked by the UTC day, and kept.
    let step = plan.next(items(dayItems(40)));
    while (!step.done) step = plan.next(serving(40)(step));
    expect(step.value).toMatchObject({ truncated: false });
    expect((step.value as { onDay: unknown[] }).onDay).toHaveLength(40);
    expect(own.value).toMatchObject({ kind: 'ask', range: { startdate: DAY, enddate: DAY } });
  });

  /** Items one a quarter hour over the days `from`..`to`, skipping `empty`, oldest first. */
  const around = (from: number, to: number, empty: string) =>
    Array.from({ length: (to - from) * 96 }, (_, i) => ({
      id: `n${i}`,
      dt: new Date(Date.parse(`${DAY}T00:00:00.000Z`) + from * DAY_MS + i * 900_000).toISOString(),
    })).filter((item) => !item.dt.startsWith(empty));

  /** The reading proved, on a server that lists oldest first. */
  const listingByDt = (): ResourceKnowledge => ({
    reading: { ...provedUtc(), order: 'oldest-first' },
    staleChecked: true,
    quiet: false,
  });

  it('an empty day is settled on one more request: the widest, running from before the day to after it with none of its items', () => {
    const { plan } = start(listingByDt());
    const wide = plan.next(items([]));
    expect(wide.value).toMatchObject({ kind: 'ask', range: widestRequest(DAY) });
    const done = plan.next(items(around(-2, 3, DAY)));
    expect(done.done).toBe(true);
    expect(done.value).toMatchObject({ truncated: false });
    expect((done.value as { onDay: unknown[] }).onDay).toHaveLength(0);
  });

  it('a widest answer that stops before the day (cut, the cap not yet known) settles nothing at once: the day is asked again', () => {
    const { plan } = start(listingByDt());
    plan.next(items([]));
    const again = plan.next(items(around(-2, -1, DAY)));
    expect(again.done).toBe(false);
    expect(again.value).toMatchObject({ kind: 'ask', range: { startdate: DAY, enddate: DAY } });
  });

  describe('a day an earlier run settled empty', () => {
    const again = (knowledge: ResourceKnowledge, open = false) => {
      const plan = planDay(newDayFetch('feedback', DAY, POLICY, knowledge, open, true));
      return { plan, first: plan.next() };
    };

    it('is asked the widest request first: still empty, its answer settles the day alone', () => {
      const { plan, first } = again(listingByDt());
      expect(first.value).toMatchObject({ kind: 'ask', range: widestRequest(DAY) });
      const done = plan.next(items(around(-2, 3, DAY)));
      expect(done.done).toBe(true);
      expect(done.value).toMatchObject({ truncated: false, requests: 1 });
      expect((done.value as { onDay: unknown[] }).onDay).toHaveLength(0);
    });

    it('with items now, it is asked its own request too, which must hold every item the widest held', () => {
      const { plan } = again(listingByDt());
      const own = plan.next(items(dayItems(300)));
      expect(own.value).toMatchObject({ kind: 'ask', range: { startdate: DAY, enddate: DAY } });
      const done = plan.next(items(dayItems(300)));
      expect(done.done).toBe(true);
      expect(done.value).toMatchObject({ truncated: false });
      expect((done.value as { onDay: unknown[] }).onDay).toHaveLength(300);
    });

    it('with items now that its own request no longer serves (a stale reading), it is never settled short', () => {
      const knowledge = listingByDt();
      const { plan } = again(knowledge);
      // The widest request holds the day's 300 items; the narrow ones, under a reading gone stale,
      // serve 120 of them, whatever the reading learned again asks.
      let step = plan.next(items(dayItems(300)));
      const short = serving(120);
      for (let asks = 0; !step.done && asks < 20; asks++) step = plan.next(short(step));
      expect(step.done).toBe(true);
      expect(step.value).toMatchObject({ truncated: true });
      expect(knowledge.relearned).toBe(1);
    });

    /** Runs the day's plan against `answer` to its end: the ranges it asked and its outcome. */
    const play = (knowledge: ResourceKnowledge, hint: boolean, answer: (range: Range) => unknown[]) => {
      const plan = planDay(newDayFetch('feedback', DAY, POLICY, knowledge, false, hint));
      const asked: Range[] = [];
      let step = plan.next();
      for (let asks = 0; !step.done && asks < 30; asks++) {
        const { range } = step.value as { range: Range };
        asked.push(range);
        step = plan.next(items(answer(range)));
      }
      return { asked, outcome: step.value };
    };
    const widest = widestRequest(DAY);
    const isWidest = (range: Range) =>
      range.startdate === widest.startdate && range.enddate === widest.enddate;

    it('a widest answer that stops before the day (cut, the cap not yet known) settles nothing: the day is asked as one found empty first', () => {
      const cutBefore = (range: Range) => (isWidest(range) ? around(-2, -1, DAY) : []);
      const hinted = play(listingByDt(), true, cutBefore);
      expect(hinted.asked[0]).toEqual(widest);
      expect(hinted.asked[1]).toEqual({ startdate: DAY, enddate: DAY });
      const unhinted = play(listingByDt(), false, cutBefore);
      // As many requests, the widest first, and the same verdict, on the same answers.
      expect(hinted.asked).toHaveLength(unhinted.asked.length);
      expect(hinted.outcome).toEqual(unhinted.outcome);
      expect(hinted.asked.filter(isWidest)).toHaveLength(unhinted.asked.filter(isWidest).length);
    });

    it('on a server not known to list by dt, where no widest answer settles an empty day alone, its own request comes first', () => {
      const { first } = again({ reading: provedUtc(), staleChecked: true, quiet: false });
      expect(first.value).toMatchObject({ kind: 'ask', range: { startdate: DAY, enddate: DAY } });
      const shuffled = again({
        reading: { ...provedUtc(), order: 'unordered' },
        staleChecked: true,
        quiet: false,
      });
      expect(shuffled.first.value).toMatchObject({ kind: 'ask', range: { startdate: DAY, enddate: DAY } });
    });

    it('not over yet (today), it is asked as any open day: its own request first', () => {
      const { first } = again(listingByDt(), true);
      expect(first.value).toMatchObject({ kind: 'ask', range: { startdate: DAY, enddate: DAY } });
    });

    it('in quiet mode, where every day is asked the widest request, it is asked as any day', () => {
      const empty = (range: Range) => (isWidest(range) ? around(-2, 3, DAY) : []);
      const hinted = play({ ...listingByDt(), quiet: true }, true, empty);
      const unhinted = play({ ...listingByDt(), quiet: true }, false, empty);
      expect(hinted.asked).toEqual(unhinted.asked);
      expect(hinted.outcome).toEqual(unhinted.outcome);
    });
  });

  it('a day answered with fewer of its items than a neighbour’s answer held is asked again, and flagged if it stays short', () => {
    const knowledge: ResourceKnowledge = { reading: provedUtc(), staleChecked: true, quiet: false };
    // A neighbour's answer held 300 items of the day (its request reached into it).
    noteAnswer(sessionOf(knowledge), dayItems(300));
    const { plan } = start(knowledge);
    let step = plan.next(items(dayItems(120)));
    // The reading is learned again: the day is asked anew, whatever request that takes; the
    // server still serves 120 of the 300 items an earlier answer held.
    const short = serving(120);
    for (let asks = 0; !step.done && asks < 20; asks++) step = plan.next(short(step));
    expect(step.done).toBe(true);
    // Never settled short: flagged for what it could not read whole.
    expect(step.value).toMatchObject({ truncated: true });
    expect(knowledge.relearned).toBe(1);
  });

  it('the same day answered whole after the reading is learned again settles, with every item', () => {
    const knowledge: ResourceKnowledge = { reading: provedUtc(), staleChecked: true, quiet: false };
    noteAnswer(sessionOf(knowledge), dayItems(300));
    const { plan } = start(knowledge);
    let step = plan.next(items(dayItems(120)));
    const whole = serving(300);
    for (let asks = 0; !step.done && asks < 20; asks++) step = plan.next(whole(step));
    expect(step.done).toBe(true);
    expect(step.value).toMatchObject({ truncated: false });
    expect((step.value as { onDay: unknown[] }).onDay).toHaveLength(300);
  });
});

describe('a reading the check finds stale after days were settled under it', () => {
  const BEFORE = '2026-03-09';
  /** `count` items of `day`, one every 10 minutes from 01:00. */
  const of = (day: string, count: number) =>
    Array.from({ length: count }, (_, i) => ({
      id: `${day}#${i}`,
      dt: new Date(Date.parse(`${day}T01:00:00.000Z`) + i * 600_000).toISOString(),
    }));
  const truth = [...of(BEFORE, 5), ...of(DAY, 5)];

  /** An inclusive UTC server that honours instants; `short` answers the day's own request without its last two items. */
  function server(short: { value: boolean }) {
    return (value: unknown): Answer => {
      const { range } = value as { range: Range };
      const instants = range.startdate.length > 10;
      const from = instants ? Date.parse(range.startdate) : Date.parse(`${range.startdate}T00:00:00.000Z`);
      const to = instants
        ? Date.parse(range.enddate) + 1
        : Date.parse(`${range.enddate}T00:00:00.000Z`) + DAY_MS;
      const served = truth.filter((item) => Date.parse(item.dt) >= from && Date.parse(item.dt) < to);
      if (short.value && !instants && range.startdate === DAY && range.enddate === DAY) {
        short.value = false;
        return items(served.slice(0, 3));
      }
      return items(served);
    };
  }

  function settle(knowledge: ResourceKnowledge, day: string, serve: (value: unknown) => Answer) {
    const plan = planDay(newDayFetch('feedback', day, POLICY, knowledge));
    let step = plan.next();
    while (!step.done) step = plan.next(serve(step.value));
    return step.value;
  }

  it('reopens the days settled since the last proof, as a failed proof would', () => {
    const knowledge: ResourceKnowledge = {
      reading: { ...provedUtc(), order: 'oldest-first', instants: 'honoured' },
      storedReading: true,
      staleChecked: true,
      quiet: false,
    };
    const short = { value: true };
    expect(settle(knowledge, BEFORE, server(short)).onDay).toHaveLength(5);
    expect(sessionOf(knowledge).unproved).toEqual([BEFORE]);
    // The day's own answer lacks two items its UTC day asked with instants holds: the reading the
    // earlier day was settled under is stale, and that day is read again.
    const day = settle(knowledge, DAY, server(short));
    expect(day.truncated).toBe(false);
    expect(day.onDay).toHaveLength(5);
    expect(knowledge.relearned).toBe(1);
    expect(sessionOf(knowledge).reopened).toEqual([BEFORE]);
  });
});

describe('a day that holds fewer of its items than earlier runs stored of it', () => {
  // A queued run's worker sees only its own windows: the day's neighbours, read by another, show
  // it nothing of the day, and the stored reading's check was made once, perhaps before a deploy.
  const STORED = 40;
  const stored = dayItems(STORED);
  /** Neighbours' items: 20 on each side of the day, at midday, and as many five days off. */
  const neighbours = [-5, -1, 1, 5].flatMap((offset) =>
    Array.from({ length: 20 }, (_, i) => ({
      id: `n${offset}-${i}`,
      dt: new Date(Date.parse(`${DAY}T12:00:00.000Z`) + offset * DAY_MS + i * 60_000).toISOString(),
    })),
  );
  const trusting = (): ResourceKnowledge => ({ reading: provedUtc(), staleChecked: true, quiet: false });

  /** Plays the day with `itemsBefore` stored, answering each request with `serve`; the ranges asked too. */
  function play(serve: (range: Range, n: number) => unknown[], knowledge = trusting()) {
    const plan = planDay(newDayFetch('feedback', DAY, POLICY, knowledge, false, false, STORED));
    const asked: string[] = [];
    let step = plan.next();
    while (!step.done) {
      const { range } = step.value as { range: Range };
      asked.push(`${range.startdate}..${range.enddate}`);
      step = plan.next(items(serve(range, asked.length - 1)));
    }
    return { asked, fetched: step.value, knowledge };
  }
  const own = `${DAY}..${DAY}`;
  const widest = `${widestRequest(DAY).startdate}..${widestRequest(DAY).enddate}`;
  /** What an inclusive UTC server holding `dayHeld` and the neighbours serves of `range`. */
  const within = (range: Range, dayHeld: readonly { id: string; dt: string }[]) =>
    [...dayHeld, ...neighbours].filter(
      (item) =>
        item.dt.slice(0, 10) >= range.startdate.slice(0, 10) &&
        item.dt.slice(0, 10) <= range.enddate.slice(0, 10),
    );

  it('its own answer lacks the day’s last items (an end bound moved) and the widest request holds them: read again, none lost', () => {
    // The first answer, by the old deploy's reading now stale, stops early in the day; every
    // request after it is answered whole.
    const { asked, fetched, knowledge } = play((range, n) =>
      n === 0 ? stored.slice(0, 30) : within(range, stored),
    );
    expect(asked.slice(0, 2)).toEqual([own, widest]);
    expect(fetched.truncated).toBe(false);
    expect(fetched.onDay).toHaveLength(STORED);
    expect(knowledge.relearned).toBe(1);
  });

  it('items went from the server: the widest request, larger and holding none of them, and a week wider bringing more, settle the day on two more requests', () => {
    const left = stored.slice(0, 30);
    const { asked, fetched, knowledge } = play((range) => within(range, left));
    expect(asked).toEqual([own, widest, `${addDays(DAY, -9)}..${addDays(DAY, 9)}`]);
    expect(fetched.truncated).toBe(false);
    expect(fetched.onDay).toHaveLength(30);
    expect(knowledge.relearned ?? 0).toBe(0);
  });

  it('the widest request no larger than the day’s own answer (a cap a deploy lowered may cut both): never settled short', () => {
    // A server now capped at 30, every answer its first 30 items of the day.
    const { fetched } = play(() => stored.slice(0, 30));
    expect(fetched.truncated).toBe(true);
  });

  it('a widest answer a cap may have cut (a week wider brings no more): never settled short', () => {
    // The widest request cut at 50, a cap a deploy lowered below the largest answer the run saw
    // (500), before the day's items its own answer lacked; the day's own answer, 30, below it.
    const { fetched } = play((range, n) =>
      n === 0 ? stored.slice(0, 30) : within(range, n === 1 ? stored.slice(0, 30) : stored).slice(0, 50),
    );
    expect(fetched.truncated || fetched.onDay.length === STORED).toBe(true);
  });

  it('as many items as stored, or no count stored: no request more', () => {
    for (const [count, before] of [
      [STORED, STORED],
      [30, 0],
    ] as const) {
      const plan = planDay(newDayFetch('feedback', DAY, POLICY, trusting(), false, false, before));
      const first = plan.next();
      expect(first.value).toMatchObject({ kind: 'ask', range: { startdate: DAY, enddate: DAY } });
      const done = plan.next(items(stored.slice(0, count)));
      expect(done.done).toBe(true);
      expect(done.value).toMatchObject({ truncated: false });
    }
  });
});
