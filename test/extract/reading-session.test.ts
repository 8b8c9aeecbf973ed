import { describe, expect, it } from 'vitest';
import {
  canaryDay,
  ceilingOf,
  cutProofVerdict,
  cutSooner,
  daysAfterStretches,
  flappingCeilingOf,
  holdSettled,
  keepAnswer,
  keptServed,
  lacksSeen,
  ledgerTook,
  mixedAnswers,
  NEXT_DAYS_MOST,
  newSession,
  noteAnswer,
  noteCut,
  offerCutCanary,
  proofAnswered,
  proofCanary,
  proofLimit,
  proofVerdict,
  provedBefore,
  readAgain,
  reopenedBecause,
  reopenUncapped,
  reopenUncovered,
  STRETCH,
  serverChanged,
  settled,
  shapedCeilingOf,
  shortOfSeen,
  staleFound,
  startProof,
  stretchEnds,
  stretchOf,
  takeProofs,
  takeReopened,
} from '../../src/extract/reading-session.js';
import { addDays, type DayString } from '../../src/time/days.js';

const at = (day: string, hour: number, id = `${day}@${hour}`) => ({
  id,
  dt: `${day}T${String(hour).padStart(2, '0')}:00:00.000Z`,
});
const ROOM = { room: 1000, served: 3, readAsCut: true, alone: false };

describe('the reading session: what a day must reach', () => {
  it('a day holding fewer of its items than one answer of the run held is short', () => {
    const session = newSession();
    noteAnswer(session, [at('2026-03-01', 1), at('2026-03-01', 5), at('2026-03-02', 1)]);
    expect(shortOfSeen(session, '2026-03-01', [at('2026-03-01', 1)])).toBe(true);
    expect(shortOfSeen(session, '2026-03-01', [at('2026-03-01', 1), at('2026-03-01', 5)])).toBe(false);
  });

  it('a day missing an earlier or a later item than any answer showed is short, though as large', () => {
    const session = newSession();
    noteAnswer(session, [at('2026-03-01', 1), at('2026-03-01', 5)]);
    noteAnswer(session, [at('2026-03-01', 23)]);
    // Two items, as many as one answer held, but neither the 01:00 nor the 23:00 one.
    expect(shortOfSeen(session, '2026-03-01', [at('2026-03-01', 5), at('2026-03-01', 6)])).toBe(true);
    expect(shortOfSeen(session, '2026-03-01', [at('2026-03-01', 1), at('2026-03-01', 23)])).toBe(false);
  });

  it('an empty day nothing showed items of is not short; one that an answer showed items of is', () => {
    const session = newSession();
    noteAnswer(session, [at('2026-03-02', 1)]);
    expect(shortOfSeen(session, '2026-03-01', [])).toBe(false);
    expect(shortOfSeen(session, '2026-03-02', [])).toBe(true);
  });

  it('an answer lacking the first or last item seen of a day, where it serves every item, served less than its reading', () => {
    const session = newSession();
    noteAnswer(session, [at('2026-03-01', 2), at('2026-03-01', 23), at('2026-03-02', 1)]);
    const time = (day: string, hour: number) => Date.parse(`${day}T${String(hour).padStart(2, '0')}:00:00Z`);
    const range = { startdate: '2026-03-02', enddate: '2026-03-03' } as const;
    // It serves from 03-01 20:00 (a server day 4 h ahead of UTC): the 23:00 item must be there.
    const fromEight = (t: number) => t >= time('2026-03-01', 20);
    expect(lacksSeen(session, range, [time('2026-03-01', 23), time('2026-03-02', 1)], fromEight)).toBe(false);
    expect(lacksSeen(session, range, [time('2026-03-02', 1)], fromEight)).toBe(true);
    // Where it serves from 03-02 only, nothing seen of 03-01 is asked of it.
    expect(lacksSeen(session, range, [time('2026-03-02', 1)], (t) => t >= time('2026-03-02', 0))).toBe(false);
    // A day no answer showed anything of asks nothing.
    expect(lacksSeen(session, { startdate: '2026-03-20', enddate: '2026-03-21' }, [], () => true)).toBe(
      false,
    );
  });

  it('a kept answer lacking what the reading, as learned since, says it served holds another reading', () => {
    // Old readers (start exclusive) answered 03-01..03-03 with 03-02 alone; new ones (inclusive)
    // showed 03-01's items since, and the reading learned that a request serves its start day.
    const session = newSession();
    const time = (day: string, hour: number) => Date.parse(`${day}T${String(hour).padStart(2, '0')}:00:00Z`);
    noteAnswer(session, [at('2026-03-01', 2), at('2026-03-01', 22)]);
    const oldAnswer = [time('2026-03-02', 3), time('2026-03-02', 20)];
    keepAnswer(session, {
      range: { startdate: '2026-03-01', enddate: '2026-03-03' },
      times: oldAnswer,
      belowCaps: true,
    });
    const fromStartDay = () => (t: number) => t >= time('2026-03-01', 0) && t < time('2026-03-03', 0);
    expect(mixedAnswers(session, fromStartDay)).toBe(true);
    // Under the reading it was asked by (the start day not served), it lacks nothing.
    const fromNextDay = () => (t: number) => t >= time('2026-03-02', 0) && t < time('2026-03-03', 0);
    expect(mixedAnswers(session, fromNextDay)).toBe(false);
    // Only the latest answers are kept: 32 since, it is no longer judged.
    for (let i = 0; i < 32; i++)
      keepAnswer(session, {
        range: { startdate: '2026-03-05', enddate: '2026-03-06' },
        times: [],
        belowCaps: true,
      });
    expect(mixedAnswers(session, fromStartDay)).toBe(false);
  });

  it('a settled day a later answer shows held less of is reopened', () => {
    const session = newSession();
    settled(session, '2026-03-01', [at('2026-03-01', 3)], ROOM);
    noteAnswer(session, [at('2026-03-01', 3)]);
    expect(session.reopened).toEqual([]);
    noteAnswer(session, [at('2026-03-01', 22), at('2026-03-02', 1)]);
    expect(takeReopened(session)).toEqual(['2026-03-01']);
    expect(session.unproved).toEqual([]);
  });

  it('a day settled empty is reopened by a later answer holding any item of it', () => {
    // A rolling deploy: the new reading answered the day's own request empty (an end bound turned
    // exclusive), the old one then served a wider request holding the day's items.
    const session = newSession();
    settled(session, '2026-03-01', [], ROOM);
    noteAnswer(session, [at('2026-02-28', 23), at('2026-03-02', 1)]);
    expect(session.reopened).toEqual([]);
    noteAnswer(session, [at('2026-02-28', 23), at('2026-03-01', 4)]);
    expect(takeReopened(session)).toEqual(['2026-03-01']);
    expect(session.lapsed).toBe(true);
  });

  it('a settled day found short lapses the reading: the next day is not settled on it', () => {
    const session = newSession();
    settled(session, '2026-03-01', [at('2026-03-01', 3)], ROOM);
    noteAnswer(session, [at('2026-03-01', 3), at('2026-03-02', 1)]);
    expect(session.lapsed).toBe(false);
    noteAnswer(session, [at('2026-03-01', 22), at('2026-03-02', 1)]);
    expect(session.lapsed).toBe(true);
  });

  it('a canary found short is dropped: it would vouch for the reading that served it short', () => {
    const session = newSession();
    settled(session, '2026-03-01', [at('2026-03-01', 3), at('2026-03-01', 4)], ROOM);
    settled(session, '2026-03-02', [at('2026-03-02', 3)], ROOM);
    expect(session.canary?.day).toBe('2026-03-01');
    noteAnswer(session, [at('2026-03-02', 9)]);
    expect(session.canary?.day).toBe('2026-03-01');
    noteAnswer(session, [at('2026-03-01', 22)]);
    expect(session.canary).toBeUndefined();
  });
});

describe("the reading session: the day after a stretch's last", () => {
  it('asks the day after each stretch of settled days, latest first, none after today', () => {
    const session = newSession();
    for (const day of ['2026-03-01', '2026-03-02', '2026-03-03', '2026-03-07', '2026-03-09'])
      settled(session, day, [at(day, 3)], ROOM);
    expect(daysAfterStretches(session, '2026-03-09')).toEqual(['2026-03-08', '2026-03-04']);
  });

  it('asks it once a run: a day read again is held to what its answer showed (shortOfSeen)', () => {
    const session = newSession();
    settled(session, '2026-03-01', [at('2026-03-01', 3)], ROOM);
    expect(daysAfterStretches(session, '2026-03-05')).toEqual(['2026-03-02']);
    // Asked as its own request (day-plan.ts marks it), its answer showed the day short: reopened.
    session.ownAsked.add('2026-03-02');
    noteAnswer(session, [at('2026-03-01', 23), at('2026-03-02', 1)]);
    expect(takeReopened(session)).toEqual(['2026-03-01']);
    expect(daysAfterStretches(session, '2026-03-05')).toEqual([]);
    // Read again under the same short reading, the day is short of what that answer showed.
    expect(shortOfSeen(session, '2026-03-01', [at('2026-03-01', 3)])).toBe(true);
    settled(session, '2026-03-01', [at('2026-03-01', 3), at('2026-03-01', 23)], ROOM);
    expect(daysAfterStretches(session, '2026-03-05')).toEqual([]);
  });

  it("the day after whose own request the run asked (today's, open, settles nothing) is not asked again", () => {
    const session = newSession();
    settled(session, '2026-03-04', [at('2026-03-04', 3)], ROOM);
    session.ownAsked.add('2026-03-05');
    expect(daysAfterStretches(session, '2026-03-05')).toEqual([]);
  });

  it(`asks after the latest ${NEXT_DAYS_MOST} stretches at most: a run of scattered days costs no more`, () => {
    const days = ['2026-03-01', '2026-03-03', '2026-03-05', '2026-03-07', '2026-03-09', '2026-03-10'];
    expect(stretchEnds(days, new Set(days), '2026-03-20')).toEqual([
      '2026-03-10',
      '2026-03-07',
      '2026-03-05',
      '2026-03-03',
    ]);
  });

  it('a day another process settled, held as the warehouse holds it, is reopened by an answer showing an item it lacks', () => {
    const session = newSession();
    holdSettled(session, '2026-03-01', [Date.parse('2026-03-01T03:00:00Z')]);
    expect(daysAfterStretches(session, '2026-03-05')).toEqual(['2026-03-02']);
    noteAnswer(session, [at('2026-03-01', 3), at('2026-03-02', 1)]);
    expect(session.reopened).toEqual([]);
    noteAnswer(session, [at('2026-03-01', 23), at('2026-03-02', 1)]);
    expect(takeReopened(session)).toEqual(['2026-03-01']);
  });
});

describe('the reading session: proofs', () => {
  it('is due once a stretch of days is settled, and only with a canary to ask', () => {
    const session = newSession();
    for (let i = 1; i < STRETCH; i++) expect(settled(session, `2026-03-0${i}`, [], ROOM)).toBe(false);
    // No day held an item: nothing to re-ask.
    expect(settled(session, '2026-03-09', [], ROOM)).toBe(false);
    expect(settled(session, '2026-03-10', [at('2026-03-10', 4)], ROOM)).toBe(true);
    expect(session.canary?.day).toBe('2026-03-10');
  });

  it('asks the next proof after twice as many days with each proof passed in a row, at most 64, and after 8 again once stale', () => {
    const session = newSession();
    const stretches: number[] = [];
    for (let proof = 0; proof < 5; proof++) {
      stretches.push(stretchOf(session));
      proofAnswered(session, startProof(session), 'holds');
    }
    expect(stretches).toEqual([8, 16, 32, 64, 64]);
    proofAnswered(session, startProof(session), 'stale');
    expect(stretchOf(session)).toBe(STRETCH);
  });

  it("after another resource's server was found stale, days are proved by two proofs in a row, none reopened on that alone", () => {
    const session = newSession();
    provedBefore(session);
    settled(session, '2026-03-01', [at('2026-03-01', 2)], ROOM);
    serverChanged(session);
    expect(stretchOf(session)).toBe(STRETCH);
    expect(takeProofs(session)).toEqual({ reopened: [], proved: [] });
    proofAnswered(session, startProof(session), 'holds');
    expect(session.unproved).toEqual(['2026-03-01']);
    proofAnswered(session, startProof(session), 'holds');
    expect(session.unproved).toEqual([]);
    expect(takeProofs(session).proved).toEqual(['2026-03-01']);
  });

  it('from a reading earlier runs stored, starts at the longest stretch; back to 8 once stale, and not raised again', () => {
    const session = newSession();
    provedBefore(session);
    expect(stretchOf(session)).toBe(64);
    proofAnswered(session, startProof(session), 'stale');
    expect(stretchOf(session)).toBe(STRETCH);
    provedBefore(session);
    expect(stretchOf(session)).toBe(STRETCH);
  });

  it('takes as canary the settled day with most items that fits a third of one answer', () => {
    const session = newSession();
    const many = (day: string, n: number) =>
      Array.from({ length: n }, (_, i) => at(day, i % 24, `${day}#${i}`));
    settled(session, '2026-03-01', many('2026-03-01', 5), { ...ROOM, room: 30 });
    settled(session, '2026-03-02', many('2026-03-02', 12), { ...ROOM, room: 30 });
    settled(session, '2026-03-03', many('2026-03-03', 8), { ...ROOM, room: 30 });
    // 12 items do not fit a third of 30: 8 is the most that does.
    expect(session.canary?.day).toBe('2026-03-03');
    settled(session, '2026-03-04', many('2026-03-04', 9), { ...ROOM, room: 30 });
    expect(session.canary?.day).toBe('2026-03-04');
  });

  it("where the day's request holds it alone (the server's day is UTC's), takes a day just below the room: a busy source has a canary too", () => {
    const session = newSession();
    const many = (day: string, n: number) =>
      Array.from({ length: n }, (_, i) => at(day, i % 24, `${day}#${i}`));
    settled(session, '2026-03-01', many('2026-03-01', 29), { ...ROOM, room: 30, alone: true });
    expect(session.canary?.day).toBe('2026-03-01');
    // As many as one answer holds: it may come back cut, proving nothing.
    settled(session, '2026-03-02', many('2026-03-02', 30), { ...ROOM, room: 30, alone: true });
    expect(session.canary?.day).toBe('2026-03-01');
  });

  it("holds when the canary's answer has every item it held, is stale when it lacks one, unproven when cut", () => {
    const canary = {
      day: '2026-03-01',
      times: [Date.parse('2026-03-01T01:00:00Z'), Date.parse('2026-03-01T23:00:00Z')],
    };
    const both = [at('2026-03-01', 1), at('2026-03-01', 23), at('2026-03-01', 12)];
    expect(proofVerdict(canary, both, false)).toBe('holds');
    expect(proofVerdict(canary, [at('2026-03-01', 1)], false)).toBe('stale');
    expect(proofVerdict(canary, [], false)).toBe('stale');
    expect(proofVerdict(canary, [at('2026-03-01', 1)], true)).toBe('unproven');
  });

  it('an unproved canary whose answer holds an item of its day it lacks was settled short: stale, cut or not', () => {
    const times = [Date.parse('2026-03-01T01:00:00Z'), Date.parse('2026-03-01T12:00:00Z')];
    const more = [at('2026-03-01', 1), at('2026-03-01', 12), at('2026-03-01', 20)];
    const unproved = { day: '2026-03-01', times, unproved: true as const };
    expect(proofVerdict(unproved, more, false)).toBe('stale');
    expect(proofVerdict(unproved, more, true)).toBe('stale');
    // Items of the neighbours its request holds say nothing of it.
    expect(proofVerdict(unproved, [...more.slice(0, 2), at('2026-03-02', 3)], false)).toBe('holds');
    // A day a proof found whole gains an item by a late arrival, not by a short reading.
    expect(proofVerdict({ day: '2026-03-01', times }, more, false)).toBe('holds');
  });

  it('a passed proof proves the days it was asked after; a failed one reopens every unproved day', () => {
    const session = newSession();
    settled(session, '2026-03-01', [at('2026-03-01', 2)], ROOM);
    settled(session, '2026-03-02', [at('2026-03-02', 2)], ROOM);
    const proving = startProof(session);
    // Settled while the proof was out: not proved by it.
    settled(session, '2026-03-03', [at('2026-03-03', 2)], ROOM);
    proofAnswered(session, proving, 'holds');
    expect(takeProofs(session)).toEqual({ reopened: [], proved: ['2026-03-01', '2026-03-02'] });
    expect(session.unproved).toEqual(['2026-03-03']);
    proofAnswered(session, startProof(session), 'stale');
    const found = takeProofs(session);
    expect(found).toEqual({ reopened: ['2026-03-03'], proved: [] });
    // Still due until the ledger took it (its transaction may fail); then handed once.
    expect(takeProofs(session).reopened).toEqual(['2026-03-03']);
    ledgerTook(session, found);
    expect(takeProofs(session).reopened).toEqual([]);
    // And still to be read again by the run.
    expect(takeReopened(session)).toEqual(['2026-03-03']);
  });

  it('after a stale verdict, days are proved only by two proofs in a row (a rolling deploy answers either reading)', () => {
    const session = newSession();
    staleFound(session);
    settled(session, '2026-03-05', [at('2026-03-05', 2)], ROOM);
    proofAnswered(session, startProof(session), 'holds');
    expect(session.unproved).toEqual(['2026-03-05']);
    proofAnswered(session, startProof(session), 'holds');
    expect(session.unproved).toEqual([]);
  });

  it('where two readings may answer, a day is proved by two passes since it settled: a pass asked before it counts for nothing', () => {
    const session = newSession();
    staleFound(session);
    settled(session, '2026-03-05', [at('2026-03-05', 2)], ROOM);
    proofAnswered(session, startProof(session), 'holds');
    // Settled after one pass: the next one is the first that says anything of it.
    settled(session, '2026-03-06', [at('2026-03-06', 2)], ROOM);
    proofAnswered(session, startProof(session), 'holds');
    expect(session.unproved).toEqual(['2026-03-06']);
    expect(takeProofs(session).proved).toEqual(['2026-03-05']);
    proofAnswered(session, startProof(session), 'holds');
    expect(session.unproved).toEqual([]);
  });

  it("a run's end that finds two readings possible (a cut canary) proves the days since the last pass by two passes of its own", () => {
    const session = newSession();
    settled(session, '2026-03-01', [at('2026-03-01', 2)], ROOM);
    proofAnswered(session, startProof(session), 'holds');
    settled(session, '2026-03-02', [at('2026-03-02', 2)], ROOM);
    // As day-plan.ts's proveRun sets it for a canary answered at the cap.
    session.turbulent = true;
    proofAnswered(session, startProof(session), 'holds');
    expect(session.unproved).toEqual(['2026-03-02']);
    proofAnswered(session, startProof(session), 'holds');
    expect(session.unproved).toEqual([]);
  });

  it('a day asked again at once is not reopened by the stale verdict it met', () => {
    const session = newSession();
    settled(session, '2026-03-01', [at('2026-03-01', 2)], ROOM);
    settled(session, '2026-03-02', [at('2026-03-02', 2)], ROOM);
    staleFound(session, '2026-03-02');
    expect(takeReopened(session)).toEqual(['2026-03-01']);
  });

  it('days settled before a cap was proved, whose answers reached it, are reopened at the run end', () => {
    const session = newSession();
    settled(session, '2026-03-01', [at('2026-03-01', 2)], {
      room: 1000,
      served: 100,
      readAsCut: false,
      alone: false,
    });
    settled(session, '2026-03-02', [at('2026-03-02', 2)], {
      room: 1000,
      served: 40,
      readAsCut: false,
      alone: false,
    });
    // Read as a cut day, its halves judged whole below the cap it knew: the largest held 40.
    settled(session, '2026-03-03', [at('2026-03-03', 2)], {
      room: 100,
      served: 40,
      readAsCut: true,
      alone: false,
    });
    reopenUncapped(session, (served) => served >= 100);
    expect(takeReopened(session)).toEqual(['2026-03-01']);
  });

  it('a day read as cut whose halves a cap proved since may have cut is reopened, and makes no ceiling', () => {
    const session = newSession();
    // Halves judged whole below the old cap of 100; the largest came back with 60, the new cap.
    for (const day of ['2026-03-01', '2026-03-02', '2026-03-03'])
      settled(session, day, [], { room: 100, served: 60, readAsCut: true, alone: false });
    expect(ceilingOf(session, 250)).toBeUndefined();
    reopenUncapped(session, (served) => served >= 60);
    expect(takeReopened(session)).toEqual(['2026-03-01', '2026-03-02', '2026-03-03']);
  });

  it('a day settled empty on the word of a reading check whose answer a cap proved since may have cut is reopened, and makes no ceiling', () => {
    const session = newSession();
    // Its own answer empty, the check's widest answer 30 items, judged whole then: no cap known.
    for (const day of ['2026-03-01', '2026-03-02', '2026-03-03'])
      settled(session, day, [], { room: 250, served: 0, readAsCut: false, alone: true, checkedAt: 30 });
    expect(ceilingOf(session, 250)).toBeUndefined();
    reopenUncapped(session, (served) => served >= 40);
    expect(takeReopened(session)).toEqual([]);
    reopenUncapped(session, (served) => served >= 30);
    expect(takeReopened(session)).toEqual(['2026-03-01', '2026-03-02', '2026-03-03']);
  });

  it('asked as days settle, a cap proved mid-run reopens the days at its size at once; the others are asked again later', () => {
    const session = newSession();
    const uncapped = { room: 1000, readAsCut: false, alone: false };
    settled(session, '2026-03-01', [], { ...uncapped, served: 60 });
    settled(session, '2026-03-02', [], { ...uncapped, served: 80 });
    reopenUncapped(session, (served) => served === 60);
    expect(takeReopened(session)).toEqual(['2026-03-01']);
    reopenUncapped(session, (served) => served === 60);
    expect(takeReopened(session)).toEqual([]);
    reopenUncapped(session, (served) => served >= 80);
    expect(takeReopened(session)).toEqual(['2026-03-02']);
  });
});

describe("the reading session: a proof's limit", () => {
  // A cache keyed on the whole address answers a request it held before a deploy as then: each
  // proof asks at a limit of its own, so that no proof repeats an address an earlier one asked.
  it('is another one each proof, below the day limit and above what the canary holds', () => {
    const session = newSession();
    expect(proofLimit(session, 1000)).toBe(1000);
    settled(session, '2026-03-04', [at('2026-03-04', 4), at('2026-03-04', 9)], ROOM);
    const limits = Array.from({ length: 50 }, () => {
      startProof(session);
      return proofLimit(session, 1000);
    });
    expect(new Set(limits).size).toBe(50);
    for (const limit of limits) {
      expect(limit).toBeLessThan(1000);
      expect(limit).toBeGreaterThan(2);
    }
  });

  it("starts at a limit of the run's own: a cache holding answers from one night's run to the next holds none of this run's proofs", () => {
    const runs = Array.from({ length: 20 }, () => {
      const session = newSession();
      settled(session, '2026-03-04', [at('2026-03-04', 4), at('2026-03-04', 9)], ROOM);
      startProof(session);
      return proofLimit(session, 1000);
    });
    // The same canary and count each run: only the run's own start tells them apart.
    expect(new Set(runs).size).toBeGreaterThan(1);
    const [last, tonight] = [newSession(), newSession()];
    for (const session of [last, tonight])
      settled(session, '2026-03-04', [at('2026-03-04', 4), at('2026-03-04', 9)], ROOM);
    last.proofSalt = 0;
    tonight.proofSalt = 1;
    const asked = (session: typeof last) =>
      [1, 2, 3].map(() => {
        startProof(session);
        return proofLimit(session, 1000);
      });
    expect(asked(last)).toEqual([998, 997, 996]);
    expect(asked(tonight)).toEqual([997, 996, 995]);
  });

  it("stays the day's limit where no room is left above the canary, and clears a cut canary's size", () => {
    const session = newSession();
    settled(session, '2026-03-04', [at('2026-03-04', 4), at('2026-03-04', 9)], ROOM);
    expect(proofLimit(session, 4)).toBe(4);
    const capped = newSession();
    offerCutCanary(capped, {
      day: '2026-03-02',
      range: { startdate: '2026-03-01', enddate: '2026-03-03' },
      count: 60,
      first: Date.parse('2026-03-02T23:00:00Z'),
      last: Date.parse('2026-03-02T09:00:00Z'),
    });
    expect(proofLimit(capped, 62)).toBe(62);
    for (let proof = 0; proof < 40; proof++) {
      startProof(capped);
      expect(proofLimit(capped, 100)).toBeGreaterThan(61);
    }
  });
});

describe('the reading session: the cut canary', () => {
  const ms = (iso: string) => Date.parse(iso);
  /** A cut answer to 2026-03-02's request, newest first: 60 items from 23:00 back to 09:00. */
  const cut = {
    day: '2026-03-02',
    range: { startdate: '2026-03-01', enddate: '2026-03-03' },
    count: 60,
    first: ms('2026-03-02T23:00:00Z'),
    last: ms('2026-03-02T09:00:00Z'),
  };
  const answer = (count: number, first: string, last: string) =>
    Array.from({ length: count }, (_, i) => ({
      id: `#${i}`,
      dt: i === 0 ? first : i === count - 1 ? last : '2026-03-02T12:00:00.000Z',
    }));
  const neverCut = () => false;

  it('holds at its size with its first and last item', () => {
    expect(
      cutProofVerdict(cut, answer(60, '2026-03-02T23:00:00.000Z', '2026-03-02T09:00:00.000Z'), neverCut),
    ).toBe('holds');
  });

  it('is stale where the listing starts elsewhere (a zone moved: the newest item is hours earlier), or ends elsewhere at its size', () => {
    expect(
      cutProofVerdict(cut, answer(60, '2026-03-02T18:20:00.000Z', '2026-03-02T04:00:00.000Z'), neverCut),
    ).toBe('stale');
    expect(
      cutProofVerdict(cut, answer(60, '2026-03-02T23:00:00.000Z', '2026-03-02T08:00:00.000Z'), neverCut),
    ).toBe('stale');
    expect(cutProofVerdict(cut, [], neverCut)).toBe('stale');
  });

  it('is stale smaller and not cut (the span holds fewer items than it served), unproven at another size a cap may explain', () => {
    const smaller = answer(40, '2026-03-02T23:00:00.000Z', '2026-03-02T14:00:00.000Z');
    expect(cutProofVerdict(cut, smaller, neverCut)).toBe('stale');
    expect(cutProofVerdict(cut, smaller, (count) => count === 40)).toBe('unproven');
    const larger = answer(100, '2026-03-02T23:00:00.000Z', '2026-03-02T02:00:00.000Z');
    expect(cutProofVerdict(cut, larger, (count) => count >= 100)).toBe('unproven');
  });

  it('is taken once (the older proves more), and asked instead of a canary taken after it, not before it', () => {
    const session = newSession();
    offerCutCanary(session, cut);
    offerCutCanary(session, { ...cut, day: '2026-03-05' });
    expect(session.cutCanary?.day).toBe('2026-03-02');
    // A canary settled later: the cut canary, older, is asked.
    settled(session, '2026-03-04', [at('2026-03-04', 4)], ROOM);
    expect(session.canary?.day).toBe('2026-03-04');
    expect(proofCanary(session)).toEqual({ cut });
    expect(canaryDay(session)).toBe('2026-03-02');
    // A stale verdict drops it: the reading learned again takes its own, after the canary now.
    staleFound(session);
    offerCutCanary(session, { ...cut, day: '2026-03-06' });
    expect(canaryDay(session)).toBe('2026-03-04');
  });

  it('found unproven is dropped, and the canary asked', () => {
    const session = newSession();
    offerCutCanary(session, cut);
    settled(session, '2026-03-04', [at('2026-03-04', 4)], ROOM);
    proofAnswered(session, startProof(session), 'unproven', 'cut');
    expect(session.cutCanary).toBeUndefined();
    expect(canaryDay(session)).toBe('2026-03-04');
  });
});

describe('the reading session: a reading that learned more since a day settled', () => {
  const READING = {};
  const asked = (startdate: string, enddate: string, relearned = 0) => ({
    ...ROOM,
    readAsCut: false,
    under: { range: { startdate, enddate }, relearned, reading: READING },
  });
  // The reading as it learned since: the server's day starts 5 h after UTC's, so a UTC day's first
  // hours lie in the server's day before, and its request must hold that day too.
  const lateDay = (day: string, range: { startdate: string; enddate: string }) =>
    range.startdate < day && range.enddate >= day;

  it('a day settled under a request the reading now says misses part of it is reopened, once', () => {
    const session = newSession();
    settled(session, '2026-03-04', [at('2026-03-04', 9)], asked('2026-03-04', '2026-03-05'));
    settled(session, '2026-03-05', [at('2026-03-05', 9)], asked('2026-03-04', '2026-03-05'));
    reopenUncovered(session, lateDay, { relearned: 0, reading: READING });
    expect(takeReopened(session)).toEqual(['2026-03-04']);
    reopenUncovered(session, lateDay, { relearned: 0, reading: READING });
    expect(takeReopened(session)).toEqual([]);
  });

  it('a day settled under an earlier generation of the reading (before a stale verdict) is judged by the new one only at the run’s end', () => {
    const session = newSession();
    settled(session, '2026-03-04', [at('2026-03-04', 9)], asked('2026-03-04', '2026-03-05', 0));
    // As days settle: learned again from nothing, the reading allows any server day, and proves
    // no request short by it.
    reopenUncovered(session, () => false, { relearned: 1, reading: READING });
    expect(takeReopened(session)).toEqual([]);
    // One the new deploy's items taught says the request missed part of the day: read again.
    reopenUncovered(session, lateDay, { relearned: 1, reading: READING, final: true, evidence: true });
    expect(takeReopened(session)).toEqual(['2026-03-04']);
  });

  it('a day read in parts under a reading since proved stale is reopened at the run’s end, its request still covering it', () => {
    const session = newSession();
    const inParts = (day: string, startdate: string, enddate: string, relearned: number) =>
      settled(session, day as DayString, [at(day, 9)], {
        ...ROOM,
        readAsCut: true,
        under: { range: { startdate, enddate }, relearned, reading: READING, parts: true },
      });
    const covering = () => true;
    inParts('2026-03-04', '2026-03-02', '2026-03-06', 0);
    settled(session, '2026-03-05', [at('2026-03-05', 9)], asked('2026-03-03', '2026-03-07', 0));
    inParts('2026-03-06', '2026-03-04', '2026-03-08', 1);
    // Under the reading it was read by: its parts stand.
    reopenUncovered(session, covering, { relearned: 0, reading: READING, final: true, evidence: true });
    expect(takeReopened(session)).toEqual([]);
    // The reading proved stale since (a slice a new reader answered as the dates it names ends at
    // the server's midnight): the parts read before the verdict are read again; a day one answer
    // held, its request covering it, stands, and so do parts read since.
    reopenUncovered(session, covering, { relearned: 1, reading: READING, final: true, evidence: true });
    expect(takeReopened(session)).toEqual(['2026-03-04']);
  });

  it('days reopened because a request no longer holds them are read again for late evidence, not a stale reading, though the proofs ask twice', () => {
    // A busy site: its cut canary makes the proofs ask twice (as after a deploy another resource
    // of the source saw), and a bound that moved by hours widened the requests.
    const session = newSession();
    settled(session, '2026-03-04', [at('2026-03-04', 9)], asked('2026-03-04', '2026-03-05'));
    serverChanged(session);
    reopenUncovered(session, lateDay, { relearned: 0, reading: READING });
    expect(takeReopened(session)).toEqual(['2026-03-04']);
    const day = '2026-03-04' as DayString;
    expect(
      reopenedBecause([
        { session, day },
        { session: undefined, day },
      ]),
    ).toBe('late evidence');
    // A stale verdict of any of them is what the run says it reads the days again for.
    const stale = newSession();
    settled(stale, '2026-03-04', [at('2026-03-04', 9)], asked('2026-03-04', '2026-03-05'));
    staleFound(stale);
    expect(
      reopenedBecause([
        { session, day },
        { session: stale, day },
      ]),
    ).toBe('stale');
  });

  it('a day flagged while the server changed how it answers is read again for that change, unless a reading was proved stale', () => {
    const session = newSession();
    const day = '2026-03-04' as DayString;
    readAgain(session, day);
    expect(reopenedBecause([{ session, day }])).toBe('changed');
    // Only that day: another reopened with it in the same session is late evidence.
    expect(reopenedBecause([{ session, day: '2026-03-05' as DayString }])).toBe('late evidence');
    staleFound(session);
    expect(reopenedBecause([{ session, day }])).toBe('stale');
  });

  it('at the run’s end, a reading loaded afresh with no items on an end judges no day settled under the one before', () => {
    // A queued worker's: it knows less than the reading the day was settled under, not that it changed.
    const session = newSession();
    settled(session, '2026-03-04', [at('2026-03-04', 9)], asked('2026-03-04', '2026-03-05', 0));
    reopenUncovered(session, () => false, { relearned: 0, reading: {}, final: true, evidence: false });
    expect(takeReopened(session)).toEqual([]);
  });

  it('at the run’s end, a reading reset by a stale verdict and taught nothing since reopens the days settled on narrow requests before it', () => {
    // A rolling deploy: its old readers answered the canary that passed, its new ones the days, and
    // the proof at the run's end found the reading stale. Reset, the reading allows any server day:
    // only the widest request holds a day under it.
    const session = newSession();
    settled(session, '2026-03-04', [at('2026-03-04', 9)], asked('2026-03-03', '2026-03-04', 0));
    settled(session, '2026-03-05', [at('2026-03-05', 9)], asked('2026-03-03', '2026-03-07', 0));
    const widest = (day: string, range: { startdate: string; enddate: string }) =>
      range.startdate <= addDays(day, -2) && range.enddate >= addDays(day, 2);
    reopenUncovered(session, widest, { relearned: 1, reading: READING, final: true, evidence: false });
    expect(takeReopened(session)).toEqual(['2026-03-04']);
  });

  it('at the run’s end, a day settled under an earlier generation whose request the reading still holds stays', () => {
    const session = newSession();
    settled(session, '2026-03-05', [at('2026-03-05', 9)], asked('2026-03-04', '2026-03-05', 0));
    reopenUncovered(session, lateDay, { relearned: 1, reading: READING, final: true, evidence: true });
    expect(takeReopened(session)).toEqual([]);
  });

  it('a reading loaded afresh (a queued worker reading the run’s reading again) judges no day settled under the one before', () => {
    const session = newSession();
    settled(session, '2026-03-04', [at('2026-03-04', 9)], asked('2026-03-04', '2026-03-05'));
    reopenUncovered(session, () => false, { relearned: 0, reading: {} });
    expect(takeReopened(session)).toEqual([]);
  });

  it('a day settled again is judged by the request of its last settling', () => {
    const session = newSession();
    settled(session, '2026-03-04', [at('2026-03-04', 9)], asked('2026-03-04', '2026-03-05'));
    settled(session, '2026-03-04', [at('2026-03-04', 9)], asked('2026-03-03', '2026-03-05'));
    reopenUncovered(session, lateDay, { relearned: 0, reading: READING });
    expect(takeReopened(session)).toEqual([]);
  });

  it('a day settled on the widest request (no request named) is never reopened so', () => {
    const session = newSession();
    settled(session, '2026-03-04', [], { ...ROOM, readAsCut: false });
    reopenUncovered(session, () => false, { relearned: 0, reading: READING });
    expect(takeReopened(session)).toEqual([]);
  });
});

describe('the reading session: sizes a cap cut at', () => {
  const day = (hour: number) => at('2026-03-01', hour);
  const other = (hour: number) => at('2026-03-02', hour);

  it('an answer below our limit holding fewer of a day than another held is a cut, a cap once seen twice', () => {
    const session = newSession();
    noteAnswer(session, [day(1), day(2), day(3), day(4)]);
    // Two items where four were seen: a size a cap may cut at, seen once.
    expect(noteCut(session, '2026-03-01', [day(1), day(2)], 1000)).toBe(false);
    // The same size again, on another answer holding the day: the cap.
    expect(noteCut(session, '2026-03-01', [day(1), day(2)], 1000)).toBe(true);
  });

  it('an answer at our limit, an empty one, or one holding as much of the day as seen is no sighting', () => {
    const session = newSession();
    noteAnswer(session, [day(1), day(2), day(3)]);
    for (let i = 0; i < 2; i++) {
      expect(noteCut(session, '2026-03-01', [day(1), day(2)], 2)).toBe(false);
      expect(noteCut(session, '2026-03-01', [], 1000)).toBe(false);
      expect(noteCut(session, '2026-03-01', [day(1), day(2), day(3), other(1)], 1000)).toBe(false);
      // A day no answer held before: nothing to fall short of.
      expect(noteCut(session, '2026-03-03', [at('2026-03-03', 1)], 1000)).toBe(false);
    }
    expect(session.cutSeen.size).toBe(0);
  });

  it('sizes differing each time (a bound or a zone that moved) never make a cap', () => {
    const session = newSession();
    noteAnswer(session, [day(1), day(2), day(3), day(4), day(5)]);
    expect(noteCut(session, '2026-03-01', [day(1)], 1000)).toBe(false);
    expect(noteCut(session, '2026-03-01', [day(1), day(2)], 1000)).toBe(false);
    expect(noteCut(session, '2026-03-01', [day(1), day(2), day(3)], 1000)).toBe(false);
  });
});

describe('the reading session: a cap lowered during the run', () => {
  /** Days settled in order at these sizes, under no cap the run knows at that size. */
  const settledAt = (sizes: number[], answers: (string | undefined)[] = []) => {
    const session = newSession();
    for (const [i, served] of sizes.entries()) {
      const answer = answers[i];
      settled(session, `2026-03-${String(i + 1).padStart(2, '0')}`, [], {
        ...ROOM,
        served,
        readAsCut: false,
        ...(answer === undefined ? {} : { answer }),
      });
    }
    return session;
  };

  it('days settled three times at one size, none larger since the first, leave a ceiling at that size', () => {
    expect(ceilingOf(settledAt([97, 80, 60, 41, 60, 12, 60, 33]), 250)).toEqual({
      day: '2026-03-03',
      size: 60,
    });
  });

  it('days settled on one answer count once: an empty day asked with its neighbour holds the same items at the same size', () => {
    const sizes = [97, 60, 60, 41, 60, 33];
    expect(ceilingOf(settledAt(sizes, [undefined, 'a', 'a', undefined, 'b']), 250)).toBeUndefined();
    expect(ceilingOf(settledAt(sizes, [undefined, 'a', 'c', undefined, 'b']), 250)).toEqual({
      day: '2026-03-02',
      size: 60,
    });
    // Nor is a size two days settled on one answer a rolling deploy's: one answer, no repeat.
    const flapping = settledAt([97, 60, 60, 84, 30], [undefined, 'a', 'a']);
    expect(flappingCeilingOf(flapping, 250, ceilingOf(flapping, 250))).toBeUndefined();
    const twice = settledAt([97, 60, 60, 84, 30], [undefined, 'a', 'b']);
    expect(flappingCeilingOf(twice, 250, ceilingOf(twice, 250))).toEqual({ day: '2026-03-02', size: 60 });
  });

  it('a larger day after it, or only two at the size, is no ceiling: sizes a steady server serves at random', () => {
    expect(ceilingOf(settledAt([60, 44, 60, 60, 61]), 250)).toBeUndefined();
    expect(ceilingOf(settledAt([97, 60, 41, 60]), 250)).toBeUndefined();
  });

  /** A day's items, `count` of them evenly from `from` to `to` o'clock (minutes apart). */
  const spread = (day: string, count: number, from: number, to: number) =>
    Array.from({ length: count }, (_, i) => {
      const minute = Math.floor(from * 60 + ((to - from) * 60 * i) / count);
      const time = `${String(Math.floor(minute / 60)).padStart(2, '0')}:${String(minute % 60).padStart(2, '0')}`;
      return { id: `${day}#${i}`, dt: `${day}T${time}:00.000Z` };
    });
  /** Days settled whole on their own answers, each of its items from `from` to `to` o'clock. */
  const shaped = (days: { count: number; from: number; to: number }[]) => {
    const session = newSession();
    for (const [i, { count, from, to }] of days.entries()) {
      const day = `2026-03-${String(i + 1).padStart(2, '0')}`;
      settled(session, day, spread(day, count, from, to), { ...ROOM, served: count, readAsCut: false });
    }
    return session;
  };
  const allDay = { count: 80, from: 0, to: 24 };

  it('a day settled with none of its items in hours where the other days hold most of theirs leaves a ceiling at its size', () => {
    // A rolling deploy's new reader, capped at 60, listing newest first: the day's last 8 hours.
    const session = shaped([allDay, allDay, allDay, { count: 60, from: 16, to: 24 }, allDay]);
    expect(shapedCeilingOf(session, 250, [])).toEqual({ day: '2026-03-04', size: 60 });
    // Cut at the other end (oldest first): its first 10 hours.
    const oldestFirst = shaped([allDay, allDay, allDay, { count: 60, from: 0, to: 10 }]);
    expect(shapedCeilingOf(oldestFirst, 250, [])).toEqual({ day: '2026-03-04', size: 60 });
    // Not a size a ceiling was found at already: that one is checked.
    expect(shapedCeilingOf(session, 250, [undefined, { size: 60 }])).toBeUndefined();
  });

  it('hours every day leaves empty (a site asleep at night), a short quiet stretch, or too few items to tell are no ceiling', () => {
    const daytime = { count: 80, from: 8, to: 22 };
    expect(
      shapedCeilingOf(shaped([daytime, daytime, daytime, { count: 60, from: 9, to: 21 }]), 250, []),
    ).toBeUndefined();
    // Two hours without items at the day's start: as likely as not for 20 items.
    expect(
      shapedCeilingOf(shaped([allDay, allDay, allDay, { count: 20, from: 2, to: 24 }]), 250, []),
    ).toBeUndefined();
    // Fewer than 200 items in all: no shape of a day to judge by.
    expect(
      shapedCeilingOf(
        shaped([
          { count: 50, from: 0, to: 24 },
          { count: 60, from: 16, to: 24 },
        ]),
        250,
        [],
      ),
    ).toBeUndefined();
  });

  it('small sizes a quiet source repeats are no ceiling, nor our limit, nor days settled knowing a cap at their size', () => {
    expect(ceilingOf(settledAt([3, 1, 3, 3, 2]), 250)).toBeUndefined();
    // At our limit: cut by us, and read on as cut days (halves, time slices).
    expect(ceilingOf(settledAt([250, 240, 250, 250]), 250)).toBeUndefined();
    const session = newSession();
    for (const day of ['2026-03-01', '2026-03-02', '2026-03-03'])
      settled(session, day, [], { ...ROOM, served: 60, readAsCut: true });
    expect(ceilingOf(session, 250)).toBeUndefined();
  });

  it("a rolling deploy's larger days in between leave no ceiling, but the size settled at most often, for its own check", () => {
    /** What the run's end checks besides the ceiling, as checkCeiling asks it. */
    const flapping = (sizes: number[]) => {
      const session = settledAt(sizes);
      return flappingCeilingOf(session, 250, ceilingOf(session, 250));
    };
    const rolling = settledAt([97, 60, 84, 30, 60, 88, 60, 34]);
    expect(ceilingOf(rolling, 250)).toBeUndefined();
    expect(flappingCeilingOf(rolling, 250, ceilingOf(rolling, 250))).toEqual({ day: '2026-03-02', size: 60 });
    // The more often first, then the one first seen later (a cap lowered during the run leaves its
    // size on days after the deploy); none where that is the ceiling, or where no size came twice.
    expect(flapping([40, 60, 90, 40, 60, 90, 40, 60, 99, 40])?.size).toBe(40);
    expect(flapping([40, 60, 90, 40, 60, 90, 40, 60, 99])?.size).toBe(60);
    expect(flapping([90, 69, 98, 69, 60, 90, 60, 70])).toEqual({ day: '2026-03-05', size: 60 });
    expect(flapping([97, 60, 84, 60, 3, 3, 3])?.size).toBe(60);
    expect(flapping([97, 80, 60, 41, 60, 12, 60, 33])).toBeUndefined();
    expect(flapping([97, 60, 84, 61, 3, 3, 3])).toBeUndefined();
  });
});

describe('a kept answer', () => {
  const range = { startdate: '2026-03-01', enddate: '2026-03-02' } as const;
  const minute = (n: number) => Date.parse('2026-03-01T00:00:00.000Z') + n * 60_000;

  it('knows every time it served, and whether it served an item without one, from its sorted times', () => {
    const session = newSession();
    keepAnswer(session, {
      range,
      times: [minute(9), minute(2), undefined, minute(5), minute(2)],
      belowCaps: true,
    });
    const [kept] = session.answers;
    if (kept === undefined) throw new Error('no answer kept');
    expect([2, 5, 9].map((n) => keptServed(kept, minute(n)))).toEqual([true, true, true]);
    expect([0, 3, 10].map((n) => keptServed(kept, minute(n)))).toEqual([false, false, false]);
    expect(keptServed(kept, undefined)).toBe(true);
    expect({ count: kept.count, last: kept.last }).toEqual({ count: 5, last: minute(2) });
    keepAnswer(session, { range, times: [minute(1)], belowCaps: true });
    expect(keptServed(session.answers[1] as typeof kept, undefined)).toBe(false);
  });

  it("holds a busy day's answer in 8 bytes a time, no array or set of its times", () => {
    // 32 kept answers of 10,000 items for each of three resources: as arrays and Sets of numbers
    // they took about 40 MB of the 96 MB heap a backfill runs with.
    const session = newSession();
    keepAnswer(session, {
      range,
      times: Array.from({ length: 10_000 }, (_, i) => minute(i)),
      belowCaps: false,
    });
    const [kept] = session.answers;
    expect(kept?.sorted.byteLength).toBe(80_000);
    const heldLists = Object.values(kept ?? {}).filter(
      (value) => Array.isArray(value) || value instanceof Set,
    );
    expect(heldLists).toEqual([]);
  });
});

describe('the same request cut sooner', () => {
  const range = { startdate: '2026-03-01', enddate: '2026-03-01' } as const;
  const times = (from: number, count: number) =>
    Array.from({ length: count }, (_, i) => Date.parse('2026-03-01T00:00:00.000Z') + (from + i) * 60_000);

  it('an answer of fewer items, each one an earlier answer to the request held, is cut sooner: below every cap before too', () => {
    // A cap lowered from 100 to 60 cuts a day's answer of 93 at 60: the earlier answer was below
    // the caps, yet the same request now holds a part of it.
    const session = newSession();
    keepAnswer(session, { range, times: times(0, 93), belowCaps: true });
    expect(cutSooner(session, range, times(33, 60))).toBe(true);
  });

  it('no sooner cut: as many items, an item the earlier answer lacked, another request, or nothing', () => {
    const session = newSession();
    keepAnswer(session, { range, times: times(0, 93), belowCaps: true });
    const other = { startdate: '2026-03-01', enddate: '2026-03-02' };
    expect([
      cutSooner(session, range, times(0, 93)),
      cutSooner(session, range, times(40, 60)),
      cutSooner(session, other, times(0, 60)),
      cutSooner(session, range, []),
    ]).toEqual([false, false, false, false]);
  });
});
