import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  atCap,
  atRaisedCap,
  type BoundProof,
  boundProof,
  boundStale,
  covers,
  type DayRange,
  emptyReading,
  handedOn,
  heldWhole,
  holdsDayRequest,
  learnFromAnswer,
  learnFromResponse,
  listingChanged,
  mixedReadings,
  proveCap,
  provedWhole,
  requestFor,
  type ServerReading,
  shareCaps,
  spansDay,
  startFrom,
} from '../../src/extract/server-reading.js';
import { addDays, type DayString } from '../../src/time/days.js';

const HOUR = 3_600_000;
const DAY = '2026-03-10' as DayString;

function midnight(day: DayString): number {
  return Date.parse(`${day}T00:00:00.000Z`);
}

/**
 * The answer of a server that serves [a + S, b + E) to the request (a, b): an item every
 * `everyMinutes` from its start, so that it holds to both ends.
 */
function served(range: DayRange, startMs: number, endMs: number, everyMinutes: number): { dt: string }[] {
  const items: { dt: string }[] = [];
  const end = midnight(range.enddate) + endMs;
  for (let time = midnight(range.startdate) + startMs; time < end; time += everyMinutes * 60_000)
    items.push({ dt: new Date(time).toISOString() });
  return items;
}

/** Exclusive bounds on a server whose day starts 5 h 30 min before UTC's (UTC+5:30). */
const AHEAD = { startMs: 24 * HOUR - 5.5 * HOUR, endMs: -5.5 * HOUR };
/** Exclusive bounds on a server whose day is UTC's. */
const UTC = { startMs: 24 * HOUR, endMs: 0 };

/** A reading learned from a few dense answers of the server 5.5 h ahead. */
function learnedAhead(): ServerReading {
  const reading = emptyReading();
  // A first, wider answer: the ones after it are smaller, so none of them may have been cut.
  const first = { startdate: addDays(DAY, -8), enddate: addDays(DAY, -3) };
  learnFromResponse(reading, first, served(first, AHEAD.startMs, AHEAD.endMs, 10));
  for (const day of [addDays(DAY, -3), addDays(DAY, -2)]) {
    const range = requestFor(day, reading);
    learnFromResponse(reading, range, served(range, AHEAD.startMs, AHEAD.endMs, 10));
  }
  return reading;
}

/** A reading learned from one dense answer of the UTC server. */
function learnedUtc(): ServerReading {
  const reading = emptyReading();
  const first = { startdate: addDays(DAY, -8), enddate: addDays(DAY, -3) };
  learnFromResponse(reading, first, served(first, UTC.startMs, UTC.endMs, 10));
  return reading;
}

describe('a reading that moves while the run reads', () => {
  it('a server 5.5 h ahead of UTC is asked each day with the next, which its day ends inside', () => {
    expect(requestFor(DAY, learnedAhead())).toEqual({
      startdate: addDays(DAY, -1),
      enddate: addDays(DAY, 2),
    });
  });

  it('once it answers the UTC way after many items held to its end, requests still hold the day the earlier way', () => {
    const reading = learnedAhead();
    const range = requestFor(addDays(DAY, -1), reading);
    learnFromResponse(reading, range, served(range, UTC.startMs, UTC.endMs, 10));
    // The evidence alone now asks (D-1, D+1), which a rolling deploy's old reading answers
    // 5.5 h short of the day's end; the run keeps asking (D-1, D+2) until it ends.
    expect(requestFor(DAY, reading)).toEqual({ startdate: addDays(DAY, -1), enddate: addDays(DAY, 2) });
    // What an answer must hold goes by the evidence: an old-reading answer still shows short.
    const narrow = { startdate: addDays(DAY, -1), enddate: addDays(DAY, 1) };
    expect(heldWhole(narrow, reading, midnight(DAY) + 23 * HOUR)).toBe(true);
  });

  it('a copy of the reading, as the next run loads it, asks by the evidence alone', () => {
    const reading = learnedAhead();
    const range = requestFor(addDays(DAY, -1), reading);
    learnFromResponse(reading, range, served(range, UTC.startMs, UTC.endMs, 10));
    expect(requestFor(DAY, { ...reading })).toEqual({
      startdate: addDays(DAY, -1),
      enddate: addDays(DAY, 1),
    });
  });

  it('a run that starts from a stored reading keeps its reach when the first answer moves it: earlier runs held to it', () => {
    const stored = { ...learnedAhead() };
    const range = requestFor(addDays(DAY, -1), stored);
    learnFromResponse(stored, range, served(range, UTC.startMs, UTC.endMs, 10));
    expect(requestFor(DAY, stored)).toEqual({ startdate: addDays(DAY, -1), enddate: addDays(DAY, 2) });
  });

  it('from a stored reading, a start that moves by hours moves the end as far: requests reach past it', () => {
    // A copy, as the next run loads it: a reading earlier runs learned.
    const stored = { ...learnedUtc() };
    // The server's zone moved 2 h east: its day now runs from 22:00 to 22:00 UTC. Its answers
    // show the earlier start; none can show the end that came 2 h earlier too.
    const range = requestFor(addDays(DAY, -1), stored);
    expect(range).toEqual({ startdate: addDays(DAY, -2), enddate: DAY });
    learnFromResponse(stored, range, served(range, UTC.startMs - 2 * HOUR, UTC.endMs - 2 * HOUR, 10));
    expect(requestFor(DAY, stored)).toEqual({ startdate: addDays(DAY, -1), enddate: addDays(DAY, 2) });
  });

  it('a zone that moves twice in a run: the requests reach past the start by both moves', () => {
    // A copy, as the next run loads it: a reading earlier runs learned (5.5 h ahead of UTC,
    // exclusive bounds: its day starts 18.5 h after a request's startdate midnight).
    const stored = { ...learnedAhead() };
    // Its zone moves west by 3 h (a deploy), then 3 h more: its day ends 6 h later each day, and
    // starts 6 h later, 24.5 h after a request's startdate midnight, which no item can show.
    for (const west of [3 * HOUR, 6 * HOUR]) {
      const range = requestFor(addDays(DAY, -3), stored);
      learnFromResponse(stored, range, served(range, AHEAD.startMs + west, AHEAD.endMs + west, 10));
    }
    // Each move reaches from where the last one left the requests: 18.5 + 3 + 3 h, past a day.
    // From the evidence each time, the second reached 21.5 h, and (D-1, ...) started half an hour
    // into D.
    expect(requestFor(DAY, stored).startdate).toBe(addDays(DAY, -2));
  });

  it('a start moved by hours in a cut answer widens the requests only once an answer not cut holds to it', () => {
    // A copy, as the next run loads it: a reading earlier runs learned.
    const stored = { ...learnedUtc() };
    const ahead = (range: DayRange) => served(range, UTC.startMs - 2 * HOUR, UTC.endMs - 2 * HOUR, 10);
    // Cut at our limit: it shows the start only as far as its cut, as a reading learned from cut
    // answers (a busy source, newest first) moves on a server that never changed.
    const cut = requestFor(addDays(DAY, -1), stored);
    learnFromResponse(stored, cut, ahead(cut), true);
    expect(requestFor(DAY, stored).enddate).toBe(addDays(DAY, 1));
    const whole = requestFor(addDays(DAY, -2), stored);
    learnFromResponse(stored, whole, ahead(whole), false);
    expect(requestFor(DAY, stored).enddate).toBe(addDays(DAY, 2));
  });

  it('a start moved by most of a day (a bound that turned, seen on sparse items) is no zone: the end keeps its reach', () => {
    // A copy, as the next run loads it: a reading earlier runs learned.
    const stored = { ...learnedUtc() };
    const range = requestFor(addDays(DAY, -1), stored);
    learnFromResponse(stored, range, served(range, UTC.startMs - 23 * HOUR, UTC.endMs, 10), false);
    expect(requestFor(DAY, stored).enddate).toBe(addDays(DAY, 1));
  });

  it('a run learning from nothing takes a start that moves by hours as what it learns: no wider requests', () => {
    const reading = learnedUtc();
    const range = requestFor(addDays(DAY, -1), reading);
    learnFromResponse(reading, range, served(range, UTC.startMs - 2 * HOUR, UTC.endMs - 2 * HOUR, 10));
    expect(requestFor(DAY, reading).enddate).toBe(addDays(DAY, 1));
  });

  /** Learned from nothing, then two whole answers hold items within an hour of the start: the server's, not a guess. */
  function heldUtc(): ServerReading {
    const reading = learnedUtc();
    for (const day of [addDays(DAY, -3), addDays(DAY, -2)]) {
      const range = requestFor(day, reading);
      learnFromResponse(reading, range, served(range, UTC.startMs, UTC.endMs, 10), false);
    }
    return reading;
  }

  it('a run learning from nothing whose start many items held to moves by hours moves the end as far', () => {
    const reading = heldUtc();
    // A deploy moved the server's zone 5.5 h east: its day ends 5.5 h before UTC's now, which no
    // item can show; a request that ends where the old zone's did would leave that much out.
    const range = requestFor(addDays(DAY, -1), reading);
    learnFromResponse(reading, range, served(range, AHEAD.startMs, AHEAD.endMs, 10), false);
    expect(requestFor(DAY, reading)).toEqual({ startdate: addDays(DAY, -1), enddate: addDays(DAY, 2) });
  });

  it("a start this run's own items held, moved by hours in a cut answer, moves the end as far at once", () => {
    const reading = heldUtc();
    // A deploy moved the zone 5.5 h east; the first answer after it is cut, newest first, and
    // reaches back only 1.5 h before the old start: the move is at least that, so the day's end
    // came at least that much earlier too, which no item can show.
    const range = requestFor(addDays(DAY, -1), reading);
    const answer = served(range, AHEAD.startMs, AHEAD.endMs, 10).reverse();
    const cut = answer.filter(
      (item) => Date.parse(item.dt) >= midnight(range.startdate) + UTC.startMs - 1.5 * HOUR,
    );
    learnFromResponse(reading, range, cut, true);
    expect(requestFor(DAY, reading).enddate).toBe(addDays(DAY, 2));
  });

  /** Exclusive UTC bounds learned from a dense answer listed newest first, as the next run loads them. */
  function storedNewestFirst(): ServerReading {
    const first = { startdate: addDays(DAY, -8), enddate: addDays(DAY, -3) };
    const reading = emptyReading();
    learnFromResponse(reading, first, served(first, UTC.startMs, UTC.endMs, 10).reverse());
    return { ...reading };
  }

  it('from a stored reading, a start moved by hours in a cut answer, newest first, whose newest item stops hours short of the end, moves the end as far', () => {
    const stored = storedNewestFirst();
    // Restarted 5.5 h east of UTC and capped below every day: each answer holds a day's newest
    // items, and a quiet day's reach back past the old start. Its newest item is 5.5 h short of
    // the end as the reading places it: what a zone's move shows there. No answer will come back
    // not cut, so the end's move cannot wait for one.
    const range = requestFor(addDays(DAY, -1), stored);
    const answer = served(range, AHEAD.startMs, AHEAD.endMs, 40).reverse();
    learnFromResponse(stored, range, answer, true);
    expect(requestFor(DAY, stored).enddate).toBe(addDays(DAY, 2));
  });

  it("the same start's move in a cut answer whose newest item holds the end is no zone's: the end keeps its reach", () => {
    const stored = storedNewestFirst();
    // A quiet day's cut answer reaching back past a start that earlier runs' answers never showed
    // tight (an inclusive startdate, say), its newest items at the end as before.
    const range = requestFor(addDays(DAY, -1), stored);
    const answer = served(range, UTC.startMs - 3 * HOUR, UTC.endMs, 40).reverse();
    learnFromResponse(stored, range, answer, true);
    expect(requestFor(DAY, stored).enddate).toBe(addDays(DAY, 1));
  });

  it('from a stored reading, an end moved by hours in a cut answer, oldest first, whose oldest item starts hours after the start, moves the start as far', () => {
    const first = { startdate: addDays(DAY, -8), enddate: addDays(DAY, -3) };
    const reading = emptyReading();
    learnFromResponse(reading, first, served(first, UTC.startMs, UTC.endMs, 10));
    const stored = { ...reading };
    // Restarted 5 h west of UTC: its day runs from 05:00 to 05:00 UTC; a cut answer keeps its
    // oldest items, which start 5 h after the start as the reading places it.
    const behind = { startMs: UTC.startMs + 5 * HOUR, endMs: UTC.endMs + 5 * HOUR };
    const range = requestFor(addDays(DAY, -1), stored);
    learnFromResponse(stored, range, served(range, behind.startMs, behind.endMs, 40), true);
    expect(requestFor(DAY, stored).startdate).toBe(addDays(DAY, -2));
  });

  /** A reading learned from one dense answer of the UTC server, listing in no order: no cut keeps either end. */
  function learnedShuffledUtc(): ServerReading {
    const first = { startdate: addDays(DAY, -8), enddate: addDays(DAY, -3) };
    const reading = emptyReading();
    const items = served(first, UTC.startMs, UTC.endMs, 10);
    learnFromResponse(reading, first, [
      ...items.filter((_, i) => i % 2 === 1),
      ...items.filter((_, i) => i % 2 === 0),
    ]);
    expect(reading.order).toBe('unordered');
    return reading;
  }

  /** Restarted 5 h west of UTC, listing oldest first: its day runs from 05:00 to 05:00 UTC. */
  const behind = (range: DayRange) => served(range, UTC.startMs + 5 * HOUR, UTC.endMs + 5 * HOUR, 40);

  it('from a stored reading in no order, an end moved by hours in an answer as large as any before it moves the start as far once a check proves that answer whole', () => {
    // The next run's first answer is as large as any of the run's: a cap not yet known may have
    // cut it, and its items past the end show no more than that a cut kept them.
    const run = startFrom({ ...learnedShuffledUtc() });
    const range = requestFor(addDays(DAY, -1), run);
    const answer = behind(range);
    learnFromResponse(run, range, answer);
    expect(requestFor(DAY, run).startdate).toBe(addDays(DAY, -1));
    // A wider request brought more (the day plan's cappedAt): no cap cut it.
    provedWhole(run, range, answer);
    expect(requestFor(DAY, run).startdate).toBe(addDays(DAY, -2));
  });

  it('an end moved by hours in cut answers only is handed on: the next run, whose whole answers show no move, asks a day further back', () => {
    const run = startFrom({ ...learnedShuffledUtc() });
    const range = requestFor(addDays(DAY, -1), run);
    learnFromResponse(run, range, behind(range), true);
    // This run's answers were cut: it waits for one not cut, its days flagged meanwhile.
    expect(requestFor(DAY, run).startdate).toBe(addDays(DAY, -1));
    // Stored with its reach and loaded by the next run, which starts past the old start.
    const next = startFrom({ ...run }, handedOn(run));
    expect(requestFor(DAY, next).startdate).toBe(addDays(DAY, -2));
  });

  it('a start that fewer than ten items held to within an hour, but many within the hours it moves by, moves the end as far', () => {
    const reading = learnedUtc();
    // One whole answer, an item every 7 minutes: 9 within the start's first hour, 18 within two.
    const day = requestFor(addDays(DAY, -2), reading);
    learnFromResponse(reading, day, served(day, UTC.startMs, UTC.endMs, 7), false);
    // A deploy moved the server's zone 5.5 h east; the hours it gave up at the start held items.
    const range = requestFor(addDays(DAY, -1), reading);
    learnFromResponse(reading, range, served(range, AHEAD.startMs, AHEAD.endMs, 10), false);
    expect(requestFor(DAY, reading)).toEqual({ startdate: addDays(DAY, -1), enddate: addDays(DAY, 2) });
  });

  it("a busy source's cut answers, newest first, hold its end: an end hours later is a deploy, and requests still hold the day the earlier way", () => {
    // Inclusive bounds on a server 5.5 h ahead of UTC: its day runs from 18:30 to 18:30 UTC.
    const [oldStart, oldEnd] = [-5.5 * HOUR, 18.5 * HOUR];
    const newestFirst = (range: DayRange, startMs: number, endMs: number) =>
      served(range, startMs, endMs, 10).reverse().slice(0, 60);
    const reading = emptyReading();
    // Every answer is cut at 60 (a cap): only its newest items, which hold to the end, are the day's.
    for (const day of [addDays(DAY, -6), addDays(DAY, -5), addDays(DAY, -4), addDays(DAY, -3)]) {
      const range = requestFor(day, reading);
      learnFromResponse(reading, range, newestFirst(range, oldStart, oldEnd), true);
    }
    expect(requestFor(DAY, reading).enddate).toBe(addDays(DAY, 1));
    // A deploy moved its zone to 5 h behind UTC: its day now ends at 05:00 the next day. The
    // evidence alone asks (D-1, D), which the old reading, still answering in a rolling deploy,
    // serves only to 18:30 of D.
    const range = requestFor(addDays(DAY, -2), reading);
    learnFromResponse(reading, range, newestFirst(range, 5 * HOUR, 29 * HOUR), true);
    expect(requestFor(DAY, { ...reading }).enddate).toBe(DAY);
    expect(requestFor(DAY, reading).enddate).toBe(addDays(DAY, 1));
  });

  it('a start learned from a few items far inside it moves by hours as the run learns: no wider requests', () => {
    const reading = learnedUtc();
    // A day whose first items came after 11:30 (a sparse morning), 12 of them within the 11 hours after.
    const sparse = requestFor(addDays(DAY, -2), reading);
    learnFromResponse(reading, sparse, served(sparse, UTC.startMs + 11.5 * HOUR, UTC.endMs, 60), false);
    const range = requestFor(addDays(DAY, -1), reading);
    learnFromResponse(reading, range, served(range, UTC.startMs, UTC.endMs, 10), false);
    expect(requestFor(DAY, reading).enddate).toBe(addDays(DAY, 1));
  });

  it('from a stored reading, an enddate turned inclusive (a whole day) keeps the reach too', () => {
    // A copy, as the next run loads it: a reading earlier runs learned.
    const stored = { ...learnedUtc() };
    const range = requestFor(addDays(DAY, -1), stored);
    learnFromResponse(stored, range, served(range, UTC.startMs, 24 * HOUR, 10).slice(-50));
    expect(requestFor(DAY, stored)).toEqual({ startdate: addDays(DAY, -1), enddate: addDays(DAY, 1) });
  });

  it('a reading forgotten as stale and learned again from the new server asks by what it learns', () => {
    const reading = learnedAhead();
    // What a stale verdict does (reading-check.ts, forgetReading): the bounds learned again from nothing.
    Object.assign(reading, { headMs: null, tailMs: null });
    const wide = { startdate: addDays(DAY, -8), enddate: addDays(DAY, -3) };
    learnFromResponse(reading, wide, served(wide, UTC.startMs, UTC.endMs, 10));
    expect(requestFor(DAY, reading)).toEqual({ startdate: addDays(DAY, -1), enddate: addDays(DAY, 1) });
  });

  it('a bound learned from a few items moves inward by hours and the requests narrow with it', () => {
    const reading = emptyReading();
    const wide = { startdate: addDays(DAY, -8), enddate: addDays(DAY, -3) };
    // Two items, each hours from the server's ends: the bounds are a first guess.
    const sparse = served(wide, UTC.startMs + 6 * HOUR, UTC.endMs - 6 * HOUR, 24 * 60 * 4);
    learnFromResponse(reading, wide, sparse);
    const range = requestFor(addDays(DAY, -2), reading);
    learnFromResponse(reading, range, served(range, UTC.startMs, UTC.endMs, 10).slice(0, 100));
    learnFromResponse(reading, range, served(range, UTC.startMs, UTC.endMs, 10).slice(-100));
    expect(requestFor(DAY, reading)).toEqual({ startdate: addDays(DAY, -1), enddate: addDays(DAY, 1) });
  });

  it('a bound that moves by a whole day (proved inclusive) narrows the requests, however many items held to it', () => {
    const reading = learnedUtc();
    for (const day of [addDays(DAY, -3), addDays(DAY, -2)]) {
      const range = requestFor(day, reading);
      learnFromResponse(reading, range, served(range, UTC.startMs, UTC.endMs, 10));
    }
    expect(requestFor(DAY, reading)).toEqual({ startdate: addDays(DAY, -1), enddate: addDays(DAY, 1) });
    // An enddate that serves its own day: the end moves inward by exactly a day.
    const range = requestFor(addDays(DAY, -1), reading);
    learnFromResponse(reading, range, served(range, UTC.startMs, 24 * HOUR, 10).slice(-50));
    expect(requestFor(DAY, reading)).toEqual({ startdate: addDays(DAY, -1), enddate: DAY });
  });
});

describe('the item a bound of the reading rests on, asked again', () => {
  /** Exclusive UTC bounds learned from answers cut at 60, newest first: their newest items hold the end. */
  function learnedNewestFirst(): ServerReading {
    const reading = emptyReading();
    for (const day of [addDays(DAY, -6), addDays(DAY, -5), addDays(DAY, -4), addDays(DAY, -3)]) {
      const range = requestFor(day, reading);
      learnFromResponse(
        reading,
        range,
        served(range, UTC.startMs, UTC.endMs, 10).reverse().slice(0, 60),
        true,
      );
    }
    return reading;
  }

  it('newest first, is the item that set the end: the latest against its enddate, its day asked under the reading', () => {
    const reading = learnedNewestFirst();
    const proof = boundProof(reading) as BoundProof;
    expect(proof.side).toBe('end');
    // The first answer's newest item, 10 minutes before its enddate's midnight: none later since.
    const first = requestFor(addDays(DAY, -6), emptyReading());
    expect(proof.time).toBe(midnight(first.enddate) - 10 * 60_000);
    const day = new Date(proof.time).toISOString().slice(0, 10) as DayString;
    expect(proof.range).toEqual(requestFor(day, reading));
    expect(heldWhole(proof.range, reading, proof.time)).toBe(true);
  });

  it('a server that holds still serves it again; one whose day now ends 2 h earlier does not', () => {
    const reading = learnedNewestFirst();
    const proof = boundProof(reading) as BoundProof;
    const steady = served(proof.range, UTC.startMs, UTC.endMs, 10).reverse().slice(0, 60);
    expect(boundStale(proof, steady)).toBe(false);
    const earlier = served(proof.range, UTC.startMs - 2 * HOUR, UTC.endMs - 2 * HOUR, 10)
      .reverse()
      .slice(0, 60);
    expect(boundStale(proof, earlier)).toBe(true);
    expect(boundStale(proof, [])).toBe(true);
  });

  it('an item that went, inside what the answer served, is no stale reading', () => {
    const reading = learnedNewestFirst();
    const proof = boundProof(reading) as BoundProof;
    const later = { dt: new Date(proof.time + 5 * 60_000).toISOString() };
    const rest = served(proof.range, UTC.startMs, UTC.endMs, 10)
      .reverse()
      .filter((item) => Date.parse(item.dt) !== proof.time)
      .slice(0, 59);
    expect(boundStale(proof, [later, ...rest])).toBe(false);
  });

  it('none for a server in no order, where a cut answer keeps neither end', () => {
    const reading = learnedNewestFirst();
    reading.order = 'unordered';
    expect(boundProof(reading)).toBeUndefined();
  });

  it('none once the bound moved past the item, until an item sets it again', () => {
    const reading = learnedNewestFirst();
    // The reading forgotten as stale: its bounds are learned again from nothing.
    Object.assign(reading, { headMs: null, tailMs: null });
    expect(boundProof(reading)).toBeUndefined();
    const range = requestFor(addDays(DAY, -2), reading);
    learnFromResponse(reading, range, served(range, UTC.startMs, UTC.endMs, 10).reverse().slice(0, 60), true);
    expect(boundProof(reading)?.time).toBe(midnight(range.enddate) - 10 * 60_000);
  });
});

describe('caps the run proved', () => {
  /** An answer of `size` items a minute apart from `hour` on DAY. */
  const answer = (size: number, hour: number) =>
    Array.from({ length: size }, (_, i) => ({
      dt: new Date(midnight(DAY) + (hour * 60 + i) * 60_000).toISOString(),
    }));

  it('an answer at or above the proved cap may have been cut by it', () => {
    const reading = emptyReading();
    expect(atCap(reading, 100)).toBe(false);
    proveCap(reading, 100);
    expect(reading.cap).toBe(100);
    expect([atCap(reading, 99), atCap(reading, 100), atCap(reading, 250)]).toEqual([false, true, true]);
  });

  it('once a larger answer raises the cap, an answer of exactly the old cap may still be cut by it (a rolling deploy)', () => {
    const reading = emptyReading();
    proveCap(reading, 100);
    const range = { startdate: addDays(DAY, -1), enddate: DAY };
    learnFromResponse(reading, range, served(range, 0, 24 * HOUR, 8));
    expect(reading.cap).toBeNull();
    expect([atCap(reading, 99), atCap(reading, 100), atCap(reading, 101)]).toEqual([false, true, false]);
  });

  it('a run starts from a stored cap as one it knows: learned again, and an answer of exactly it may be cut', () => {
    const stored = { ...emptyReading(), cap: 100, largestResponse: 100 };
    const reading = startFrom(stored);
    expect([reading.cap, reading.largestResponse]).toEqual([null, 0]);
    expect([atCap(reading, 100), atRaisedCap(reading, 100)]).toEqual([true, false]);
  });

  it('a known cap that a larger answer exceeded was raised: an answer of exactly it came from the old reading, cut', () => {
    const reading = startFrom({ ...emptyReading(), cap: 100 });
    const range = { startdate: addDays(DAY, -1), enddate: DAY };
    learnFromResponse(reading, range, served(range, 0, 24 * HOUR, 8));
    expect([atRaisedCap(reading, 100), atRaisedCap(reading, 99), atRaisedCap(reading, 180)]).toEqual([
      true,
      false,
      false,
    ]);
  });

  /**
   * A reading that three different answers of `size` items stopped at, each starting an hour later
   * than the one before, to requests of 2, 4 and 18 days (a day's own, a wider one, the cap
   * check's); `limited`: each filled the limit it was asked with.
   */
  function stoppedThrice(size: number, limited = false): ServerReading {
    const reading = emptyReading();
    for (const [hour, span] of [
      [0, 2],
      [1, 4],
      [2, 18],
    ] as const)
      learnFromAnswer(reading, answer(size, hour), undefined, undefined, span, limited);
    return reading;
  }

  it('a size three different answers stopped at, then exceeded, was a cap the server raised before the run proved it', () => {
    // A cap cuts each answer at its size, where a steady server serves the wider requests more.
    const reading = stoppedThrice(60);
    expect(atCap(reading, 60)).toBe(false);
    learnFromAnswer(reading, answer(87, 3), undefined, undefined, 2);
    expect([atCap(reading, 60), atRaisedCap(reading, 60), atCap(reading, 87), reading.cap]).toEqual([
      true,
      true,
      false,
      null,
    ]);
  });

  it('answers that filled our own limit stopped at it, not at a cap: exceeded once the limit rose, they prove none', () => {
    // A server maximum stepped the limit down to 15; every answer filled it; then 19 was taken.
    const reading = stoppedThrice(15, true);
    learnFromAnswer(reading, answer(19, 3), undefined, undefined, 2, true);
    expect([atCap(reading, 15), atRaisedCap(reading, 15), reading.cap]).toEqual([false, false, null]);
  });

  it('a largest size two answers reached, one answer asked three times, requests of one span only, or a size below ten, is no sign of a cap', () => {
    const twice = emptyReading();
    for (const [hour, span] of [
      [0, 2],
      [1, 4],
    ] as const)
      learnFromAnswer(twice, answer(60, hour), undefined, undefined, span);
    learnFromAnswer(twice, answer(87, 2), undefined, undefined, 2);
    const sameAnswer = emptyReading();
    for (let i = 0; i < 4; i++) learnFromAnswer(sameAnswer, answer(60, 0), undefined, undefined, 2 + i);
    learnFromAnswer(sameAnswer, answer(87, 2), undefined, undefined, 2);
    // A source of as many items every day: each day's own request (two days) holds 12, a wider
    // one more.
    const sampled = emptyReading();
    for (const hour of [0, 1, 2, 3]) learnFromAnswer(sampled, answer(12, hour), undefined, undefined, 2);
    learnFromAnswer(sampled, answer(30, 4), undefined, undefined, 5);
    const quiet = emptyReading();
    for (const hour of [0, 1, 2, 3]) learnFromAnswer(quiet, answer(9, hour), undefined, undefined, 2 + hour);
    learnFromAnswer(quiet, answer(10, 4), undefined, undefined, 2);
    expect([atCap(twice, 60), atCap(sameAnswer, 60), atCap(sampled, 12), atCap(quiet, 9)]).toEqual([
      false,
      false,
      false,
      false,
    ]);
  });

  it('a copy of the reading, as the next run loads it, holds no cap of this run', () => {
    const reading = emptyReading();
    proveCap(reading, 100);
    reading.cap = null;
    expect(atCap({ ...reading }, 100)).toBe(false);
  });
});

describe('how a server lists its answers', () => {
  const range = { startdate: addDays(DAY, -1), enddate: DAY };
  const sorted = served(range, 0, 24 * HOUR, 60);
  /** The same items, shuffled the same way every time (every third one moved to the front). */
  const shuffled = [
    ...sorted.filter((_, i) => i % 3 === 0),
    ...sorted.filter((_, i) => i % 3 !== 0).reverse(),
  ];

  it('a long answer sorted by dt after shuffled ones, the other way round, or shuffled again, says the server changed, once', () => {
    const reading = emptyReading();
    learnFromResponse(reading, range, shuffled);
    expect(listingChanged(reading)).toBe(false);
    learnFromResponse(reading, range, sorted);
    expect([listingChanged(reading), listingChanged(reading)]).toEqual([true, false]);
    learnFromResponse(reading, range, sorted);
    expect(listingChanged(reading)).toBe(false);
    learnFromResponse(reading, range, [...sorted].reverse());
    expect(listingChanged(reading)).toBe(true);
    learnFromResponse(reading, range, shuffled);
    expect(listingChanged(reading)).toBe(true);
  });

  it('a stored reading listed newest first, answered oldest first by the next run: the server changed', () => {
    const learned = emptyReading();
    learnFromResponse(learned, range, [...sorted].reverse());
    expect(learned.order).toBe('newest-first');
    // The next run starts from what was stored: its first long answer comes the other way round.
    const next = startFrom({ ...learned });
    learnFromResponse(next, range, sorted);
    expect(listingChanged(next)).toBe(true);
    const same = startFrom({ ...learned });
    learnFromResponse(same, range, [...sorted].reverse());
    expect(listingChanged(same)).toBe(false);
  });

  it('a stored reading in no order (a shuffle, or two orders merged) is no listing to turn from', () => {
    const learned = emptyReading();
    learnFromResponse(learned, range, shuffled);
    expect(learned.order).toBe('unordered');
    const next = startFrom({ ...learned });
    learnFromResponse(next, range, sorted);
    expect(listingChanged(next)).toBe(false);
  });

  it('short answers, or one listed by id with a late arrival, say nothing', () => {
    const reading = emptyReading();
    learnFromResponse(reading, range, shuffled);
    learnFromResponse(reading, range, sorted.slice(0, 12));
    const late = [...sorted.slice(0, 30), sorted[2] as { dt: string }, ...sorted.slice(30)];
    learnFromResponse(reading, range, late);
    expect(listingChanged(reading)).toBe(false);
  });
});

describe("one source's resources know each other's caps", () => {
  it('a cap one resource proves, or one stored for it, is a size the others check their answers at', () => {
    const feedback = startFrom({ ...emptyReading(), cap: 100 });
    const recordings = emptyReading();
    learnFromAnswer(
      recordings,
      Array.from({ length: 97 }, () => ({})),
    );
    shareCaps([feedback, recordings]);
    expect(atCap(recordings, 100)).toBe(true);
    // A deploy lowered the cap to 60; feedback's answers showed it. Recordings never reached
    // 100: its answers of exactly 60 looked whole, and now are the old cap's cut.
    expect(atCap(recordings, 60)).toBe(false);
    proveCap(feedback, 60);
    expect(atCap(recordings, 60)).toBe(true);
    expect(atRaisedCap(recordings, 60)).toBe(true);
    expect(atCap(recordings, 59)).toBe(false);
  });
});

describe('bounds evidence that holds two readings at once', () => {
  const range = { startdate: DAY, enddate: DAY };
  /**
   * Each zone's four servers, as `served` takes their interval: both bounds inclusive,
   * [a + z, b + 24 h + z); the start exclusive; the end; both.
   */
  const everyBounds = (zones: readonly number[]) =>
    zones.flatMap((zone) =>
      [
        [zone, 24 * HOUR + zone],
        [24 * HOUR + zone, 24 * HOUR + zone],
        [zone, zone],
        [24 * HOUR + zone, zone],
      ].map(([start, end]) => ({ zone, start: start as number, end: end as number })),
    );

  it("a server's own answers never reach a day past their earliest, whatever its zone and bounds", () => {
    // Both bounds inclusive: [a + z, b + 24 h + z); the start exclusive: [a + 24 h + z, b + 24 h + z);
    // the end: [a + z, b + z); both: [a + 24 h + z, b + z). Asked three days at once.
    const wide = { startdate: addDays(DAY, -2), enddate: DAY };
    for (const { zone, start, end } of everyBounds([-14 * HOUR, -5 * HOUR, 0, 5.5 * HOUR, 12 * HOUR])) {
      const reading = emptyReading();
      learnFromResponse(reading, wide, served(wide, start, end, 7));
      learnFromResponse(reading, { startdate: addDays(DAY, -3), enddate: addDays(DAY, 1) }, []);
      expect(mixedReadings(reading), `zone ${zone / HOUR} h, ${start}..${end}`).toBe(false);
    }
  });

  it('a steady server held to at both ends, answering day by day, holds one reading whatever its zone and bounds', () => {
    for (const { zone, start, end } of everyBounds([-14, -13.75, -5.5, 0, 5, 12].map((h) => h * HOUR))) {
      const reading = emptyReading();
      const wide = { startdate: addDays(DAY, -12), enddate: addDays(DAY, -6) };
      learnFromResponse(reading, wide, served(wide, start, end, 7));
      const mixed: boolean[] = [mixedReadings(reading)];
      for (let back = 5; back >= 0; back--) {
        const asked = requestFor(addDays(DAY, -back), reading);
        learnFromResponse(reading, asked, served(asked, start, end, 7), false);
        mixed.push(mixedReadings(reading));
      }
      expect(mixed.some(Boolean), `zone ${zone / HOUR} h, ${start}..${end}`).toBe(false);
    }
  });

  it('an early head beside an end many items held to says the server day moved earlier, once', () => {
    // startdate inclusive, enddate exclusive, UTC days: (D, D+1) serves [D, D+1).
    const reading = emptyReading();
    const wide = { startdate: addDays(DAY, -8), enddate: addDays(DAY, -3) };
    learnFromResponse(reading, wide, served(wide, 0, 0, 10));
    for (const day of [addDays(DAY, -3), addDays(DAY, -2)]) {
      const asked = requestFor(day, reading);
      learnFromResponse(reading, asked, served(asked, 0, 0, 10), false);
    }
    expect(mixedReadings(reading)).toBe(false);
    // A deploy to UTC+5:30 (its day from 18:30 UTC), in an answer cut at our limit: its start
    // shows, not held to; its end, 5.5 h before the one held to, cannot show.
    const asked = requestFor(addDays(DAY, -1), reading);
    learnFromResponse(reading, asked, served(asked, -5.5 * HOUR, -5.5 * HOUR, 10), true);
    expect([mixedReadings(reading), mixedReadings(reading)]).toEqual([true, false]);
  });

  it("a new zone's late tail beside the old zone's early head says the server changed, once", () => {
    const reading = emptyReading();
    // UTC days, both bounds inclusive, then the day moved 5 h later (a deploy to UTC-5).
    learnFromResponse(reading, range, served(range, 0, 24 * HOUR, 30));
    expect(mixedReadings(reading)).toBe(false);
    learnFromResponse(reading, range, served(range, 5 * HOUR, 29 * HOUR, 30));
    expect([mixedReadings(reading), mixedReadings(reading)]).toEqual([true, false]);
  });
});

describe('whether a request held a day whole, for many days at once', () => {
  it('says what covers(range, requestFor(day)) says, for every reading, day and request', () => {
    const hours = (most: number) => fc.option(fc.integer({ min: -most * HOUR, max: most * HOUR }));
    fc.assert(
      fc.property(
        hours(48),
        hours(48),
        fc.integer({ min: -400, max: 400 }),
        fc.integer({ min: -4, max: 4 }),
        fc.integer({ min: 0, max: 8 }),
        (headMs, tailMs, shift, start, width) => {
          const reading: ServerReading = { ...emptyReading(), headMs, tailMs };
          const day = addDays(DAY, shift);
          const range = { startdate: addDays(day, start), enddate: addDays(day, start + width) };
          expect(holdsDayRequest(reading)(day, range)).toBe(covers(range, requestFor(day, reading)));
        },
      ),
      { numRuns: 2000 },
    );
  });
});

describe('an answer that holds a day midnight to midnight', () => {
  const at = (day: DayString, hhmm: string) => Date.parse(`${day}T${hhmm}:00.000Z`);
  const next = addDays(DAY, 1);

  it('holds every item of the day where it has one in the first quarter hour and one in the last', () => {
    expect(spansDay([at(DAY, '00:14'), at(DAY, '12:00'), at(DAY, '23:45')], DAY)).toBe(true);
    // A neighbour's items around the day change nothing: the day's own edges are what count.
    expect(
      spansDay([at(addDays(DAY, -1), '23:59'), at(DAY, '00:00'), at(DAY, '23:59'), at(next, '00:00')], DAY),
    ).toBe(true);
  });

  it("proves nothing where the day's first or last item is a quarter hour or more from its midnight", () => {
    // A server whose day starts at 00:15 (a zone a quarter hour off) would serve both answers.
    expect(spansDay([at(DAY, '00:15'), at(DAY, '23:59')], DAY)).toBe(false);
    expect(spansDay([at(DAY, '00:00'), at(DAY, '23:44')], DAY)).toBe(false);
    expect(spansDay([at(addDays(DAY, -1), '23:59'), at(next, '00:00')], DAY)).toBe(false);
    expect(spansDay([], DAY)).toBe(false);
  });
});
