import { describe, expect, it } from 'vitest';
import { readingChanges } from '../../src/extract/reading-changes.js';
import { emptyReading, type ServerReading, type StoredReach } from '../../src/extract/server-reading.js';
import { mayReplace, storeOver } from '../../src/sync/reading-store.js';

const HOUR = 3_600_000;
/** Inclusive bounds on UTC days, proved tight on both sides; listed oldest first. */
const UTC_INCLUSIVE: ServerReading = {
  ...emptyReading(),
  headMs: 0,
  tailMs: 24 * HOUR - 1,
  order: 'oldest-first',
  largestResponse: 40,
};

const fields = (before: ServerReading, after: ServerReading, relearned = false) =>
  readingChanges(before, after, relearned).map((c) => [c.field, c.from, c.to]);

describe('what counts as a change of a learned reading', () => {
  it('the same reading, or one that only narrowed its evidence, changed nothing', () => {
    expect(fields(UTC_INCLUSIVE, UTC_INCLUSIVE)).toEqual([]);
    expect(fields(UTC_INCLUSIVE, { ...UTC_INCLUSIVE, largestResponse: 3 })).toEqual([]);
  });

  it('a field learned for the first time is learning, not a change', () => {
    expect(fields(emptyReading(), UTC_INCLUSIVE)).toEqual([]);
    expect(fields(emptyReading(), UTC_INCLUSIVE, true)).toEqual([]);
    // Nothing had reached past the enddate before: enddate and server day unknown.
    expect(fields({ ...UTC_INCLUSIVE, tailMs: null }, UTC_INCLUSIVE, true)).toEqual([]);
  });

  it('evidence alone only narrows the bounds and the server day: learning, not a change', () => {
    // On quiet days nothing came later than 6 h past the enddate: taken as exclusive, a server
    // day after UTC's. An item at 23 h proves both wrong, and nothing about the server changed.
    const quiet = { ...UTC_INCLUSIVE, tailMs: 6 * HOUR };
    expect(readingChanges(quiet, UTC_INCLUSIVE, true).map((c) => c.field)).toEqual(['enddate', 'server_day']);
    expect(fields(quiet, UTC_INCLUSIVE)).toEqual([]);
  });

  it('bounds re-learned exclusive: each bound that changed, with what the answers reached', () => {
    const exclusive: ServerReading = { ...UTC_INCLUSIVE, headMs: 24 * HOUR, tailMs: -1 };
    const changes = readingChanges(UTC_INCLUSIVE, exclusive, true);
    expect(changes.map((c) => [c.field, c.from, c.to])).toEqual([
      ['startdate', 'inclusive', 'exclusive'],
      ['enddate', 'inclusive', 'exclusive'],
    ]);
    expect(changes[0]?.evidence).toBe(
      "a wider request held items the stored reading's request lacked; answers reach from startdate +24 h to enddate +0 h",
    );
  });

  it('a server day 5 h behind UTC', () => {
    const late: ServerReading = { ...UTC_INCLUSIVE, headMs: 5 * HOUR, tailMs: 29 * HOUR - 1 };
    expect(fields(UTC_INCLUSIVE, late, true)).toEqual([['server_day', 'utc', 'late']]);
  });

  it('a proved server day that is no longer proved is a change; the proof that comes later is not', () => {
    const relearning: ServerReading = { ...UTC_INCLUSIVE, headMs: 2 * HOUR, tailMs: 20 * HOUR };
    expect(fields(UTC_INCLUSIVE, relearning, true)).toEqual([['server_day', 'utc', 'unknown']]);
    expect(fields(relearning, UTC_INCLUSIVE)).toEqual([]);
  });

  it('an order the responses no longer keep', () => {
    const changes = readingChanges(UTC_INCLUSIVE, { ...UTC_INCLUSIVE, order: 'unordered' }, false);
    expect(changes).toEqual([
      {
        field: 'order',
        from: 'oldest-first',
        to: 'unordered',
        evidence: 'responses listed their items in both orders',
      },
    ]);
  });

  it('what instants do: a verdict that changed is a change; the first verdict is not', () => {
    const honoured: ServerReading = { ...UTC_INCLUSIVE, instants: 'honoured' };
    expect(fields(UTC_INCLUSIVE, honoured)).toEqual([]);
    expect(fields(honoured, { ...UTC_INCLUSIVE, instants: 'ignored' })).toEqual([
      ['instants', 'honoured', 'ignored'],
    ]);
    expect(readingChanges(honoured, { ...UTC_INCLUSIVE, instants: 'refused' }, false)).toEqual([
      {
        field: 'instants',
        from: 'honoured',
        to: 'refused',
        evidence: 'a request bounded by instants was answered 400',
      },
    ]);
    expect(fields(honoured, honoured)).toEqual([]);
  });

  it('a cap: another one proved, one a larger response broke, one lowered below an earlier response', () => {
    const capped = { ...UTC_INCLUSIVE, cap: 100, largestResponse: 100 };
    expect(fields(capped, { ...capped, cap: 50, largestResponse: 50 })).toEqual([['cap', '100', '50']]);
    expect(fields(capped, { ...capped, cap: null, largestResponse: 150 })).toEqual([['cap', '100', 'none']]);
    expect(fields({ ...UTC_INCLUSIVE, largestResponse: 80 }, { ...UTC_INCLUSIVE, cap: 30 })).toEqual([
      ['cap', 'none', '30'],
    ]);
  });

  it('a cap no run met again, or proved the first time, is no change', () => {
    const capped = { ...UTC_INCLUSIVE, cap: 100, largestResponse: 100 };
    expect(fields(capped, { ...capped, cap: null, largestResponse: 12 })).toEqual([]);
    expect(fields({ ...UTC_INCLUSIVE, largestResponse: 12 }, { ...UTC_INCLUSIVE, cap: 30 })).toEqual([]);
  });

  it('a maximum limit: raised (answered), lowered below a response served before; narrowed on its own is none', () => {
    const refused = { ...UTC_INCLUSIVE, limitRefused: 1000, largestResponse: 500 };
    expect(fields(refused, { ...refused, limitRefused: null })).toEqual([['limit_refused', '1000', 'none']]);
    expect(fields(refused, { ...refused, limitRefused: 300 })).toEqual([['limit_refused', '1000', '300']]);
    expect(fields(refused, { ...refused, limitRefused: 999 })).toEqual([]);
    expect(fields(refused, { ...refused, limitRefused: 4000 })).toEqual([['limit_refused', '1000', '4000']]);
    expect(
      fields({ ...UTC_INCLUSIVE, largestResponse: 500 }, { ...UTC_INCLUSIVE, limitRefused: 400 }),
    ).toEqual([['limit_refused', 'none', '400']]);
    expect(fields(UTC_INCLUSIVE, { ...UTC_INCLUSIVE, limitRefused: 400 })).toEqual([]);
  });
});

describe('the one store rule of every writer', () => {
  const seen = { reading: UTC_INCLUSIVE, reach: {}, relearned: 0 };
  const over = (reading: ServerReading, reach: StoredReach = {}) => ({ reading, reach });

  it('stores nothing when no response came, or nothing changed since the writer last saw it', () => {
    expect(storeOver({ reading: UTC_INCLUSIVE }, seen)).toBeUndefined();
    expect(storeOver({ reading: { ...UTC_INCLUSIVE }, responses: 3 }, seen)).toBeUndefined();
  });

  it('stores over what the writer last saw, or over nothing when it saw none', () => {
    const learned = { ...UTC_INCLUSIVE, largestResponse: 41 };
    expect(storeOver({ reading: learned, responses: 1 }, seen)).toEqual(over(UTC_INCLUSIVE));
    expect(storeOver({ reading: learned, responses: 1 }, undefined)).toBeNull();
  });

  it('a reading re-learned since replaces anything', () => {
    expect(storeOver({ reading: emptyReading(), responses: 1, relearned: 1 }, seen)).toBe('relearned');
    // Once stored, the writer stores over its own re-learned reading like any other.
    expect(
      storeOver({ reading: emptyReading(), responses: 1, relearned: 1 }, { ...seen, relearned: 1 }),
    ).toEqual(over(UTC_INCLUSIVE));
    expect(mayReplace(over(UTC_INCLUSIVE), 'relearned')).toBe(true);
    expect(mayReplace(undefined, 'relearned')).toBe(true);
  });

  it('what is stored must still be what the writer saw: nothing, or the same carried-over fields', () => {
    expect(mayReplace(undefined, null)).toBe(true);
    expect(mayReplace(over(UTC_INCLUSIVE), null)).toBe(false);
    expect(mayReplace(undefined, over(UTC_INCLUSIVE))).toBe(false);
    // The cap and the largest response are learned again each run: not compared.
    expect(mayReplace(over({ ...UTC_INCLUSIVE, cap: 7, largestResponse: 7 }), over(UTC_INCLUSIVE))).toBe(
      true,
    );
    expect(mayReplace(over({ ...UTC_INCLUSIVE, order: 'newest-first' }), over(UTC_INCLUSIVE))).toBe(false);
    expect(mayReplace(over({ ...UTC_INCLUSIVE, headMs: 24 * HOUR }), over(UTC_INCLUSIVE))).toBe(false);
  });

  it("nor over a reach another writer stored or let go since: the requests' reach is part of what was seen", () => {
    const carried = over(UTC_INCLUSIVE, { endMs: 23 * HOUR });
    expect(mayReplace(carried, carried)).toBe(true);
    expect(mayReplace(over(UTC_INCLUSIVE), carried)).toBe(false);
    expect(mayReplace(carried, over(UTC_INCLUSIVE))).toBe(false);
    expect(mayReplace(over(UTC_INCLUSIVE, { endMs: 22 * HOUR }), carried)).toBe(false);
  });

  it('stores a reach its answers let go, though the evidence stays', () => {
    // The writer loaded a reach past the evidence; its reading, as learned since, hands on none.
    const carried = { ...seen, reach: { endMs: 23 * HOUR } };
    expect(storeOver({ reading: { ...UTC_INCLUSIVE }, responses: 3 }, carried)).toEqual(
      over(UTC_INCLUSIVE, { endMs: 23 * HOUR }),
    );
  });
});
