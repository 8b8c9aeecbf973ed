import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ApiClient, WindowQuery } from '../../src/api/api-client.js';
import { ApiError } from '../../src/errors.js';
import { fetchDay, type LimitPolicy, type ResourceKnowledge } from '../../src/extract/fetch-day.js';
import {
  emptyReading,
  endInclusive,
  requestFor,
  serverDay,
  startInclusive,
} from '../../src/extract/server-reading.js';
import { addDays, type DayString, daysFrom } from '../../src/time/days.js';

/** One reading of everything spec sections 4 and 8 leave open. */
interface Reading {
  startdate: 'inclusive' | 'exclusive';
  enddate: 'inclusive' | 'exclusive';
  order: 'oldest-first' | 'newest-first' | 'random';
  /** Silent: a larger limit gets at most this many items. */
  cap: number;
  /** A limit above it answers 400. */
  maxLimit: number | null;
  /** The server's day starts at UTC midnight minus this (UTC-5: -300). */
  offsetMinutes: number;
  /**
   * An ISO instant in a bound: 400 (default), its date read as a day, or filtered by, with the
   * bound's inclusivity at it.
   */
  instants?: 'refused' | 'ignored' | 'honoured';
}

const DAY_MS = 86_400_000;
const midnight = (day: DayString) => Date.parse(`${day}T00:00:00.000Z`);

/** A fake server over items `{ id, dt }` with a fixed, seeded spread of times per day. */
class FakeServer {
  readonly calls: WindowQuery[] = [];
  readonly items: { id: string; dt: string; time: number }[] = [];
  private shuffles = 0;

  constructor(
    private readonly reading: Reading,
    counts: ReadonlyMap<DayString, number>,
    seed = 1,
  ) {
    let state = seed >>> 0 || 1;
    const random = () => {
      state = (state * 1_103_515_245 + 12_345) >>> 0;
      return state / 2 ** 32;
    };
    for (const [day, count] of counts) {
      const times = Array.from({ length: count }, () => midnight(day) + Math.floor(random() * DAY_MS)).sort(
        (a, b) => a - b,
      );
      times.forEach((time, i) => {
        this.items.push({ id: `${day}#${i}`, dt: new Date(time).toISOString(), time });
      });
    }
  }

  itemsOn(day: DayString): string[] {
    return this.items.filter((item) => item.dt.startsWith(day)).map((item) => item.id);
  }

  /** `latencyMs`: answers come after a pause, so windows fetched side by side overlap. */
  client(latencyMs = 0): ApiClient {
    const unused = (): never => {
      throw new Error('not used by fetchDay');
    };
    return {
      source: 'fake',
      baseUrl: 'http://fake.invalid',
      listTests: unused,
      testResults: unused,
      heatmaps: unused,
      requestCount: () => this.calls.length,
      window: async (_resource, query) => {
        const answer = this.window(query);
        if (latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, latencyMs));
        return answer;
      },
    };
  }

  private window(query: WindowQuery): unknown[] {
    this.calls.push({ ...query });
    const { startdate, enddate, order, cap, maxLimit, offsetMinutes, instants = 'refused' } = this.reading;
    if (maxLimit !== null && query.limit > maxLimit)
      throw new ApiError('HTTP 400', { status: 400 }, { retryable: false });
    const isInstant = (bound: string) => bound.length > 10;
    if (instants === 'refused' && (isInstant(query.startdate) || isInstant(query.enddate)))
      throw new ApiError('HTTP 400', { status: 400 }, { retryable: false });
    const honoured = (bound: string) => instants === 'honoured' && isInstant(bound);
    const first =
      startdate === 'inclusive' ? query.startdate.slice(0, 10) : addDays(query.startdate.slice(0, 10), 1);
    const last =
      enddate === 'inclusive' ? query.enddate.slice(0, 10) : addDays(query.enddate.slice(0, 10), -1);
    const from = honoured(query.startdate)
      ? Date.parse(query.startdate) + (startdate === 'inclusive' ? 0 : 1)
      : midnight(first) - offsetMinutes * 60_000;
    const to = honoured(query.enddate)
      ? Date.parse(query.enddate) + (enddate === 'inclusive' ? 1 : 0)
      : midnight(last) + DAY_MS - offsetMinutes * 60_000;
    const selected = this.items.filter((item) => item.time >= from && item.time < to);
    if (order === 'newest-first') selected.reverse();
    if (order === 'random') {
      let state = ++this.shuffles * 7919;
      for (let i = selected.length - 1; i > 0; i--) {
        state = (state * 1_103_515_245 + 12_345) >>> 0;
        const j = state % (i + 1);
        [selected[i], selected[j]] = [
          selected[j] as (typeof selected)[number],
          selected[i] as (typeof selected)[number],
        ];
      }
    }
    return selected.slice(0, Math.min(query.limit, cap)).map(({ id, dt }) => ({ id, dt }));
  }
}

const DAY = '2026-03-10';
const POLICY: LimitPolicy = { limit: 1000, maxLimit: 4000 };
const UTC_INCLUSIVE: Reading = {
  startdate: 'inclusive',
  enddate: 'inclusive',
  order: 'oldest-first',
  cap: 100_000,
  maxLimit: null,
  offsetMinutes: 0,
};

const fresh = (): ResourceKnowledge => ({ reading: emptyReading() });
const ids = (items: readonly unknown[]) => items.map((item) => (item as { id: string }).id).sort();

/** Fetches every day of a range in order with one shared knowledge, as a backfill does. */
async function fetchRange(server: FakeServer, days: DayString[], policy = POLICY, knowledge = fresh()) {
  const results = [];
  for (const day of days) {
    const fetched = await fetchDay(server.client(), 'feedback', day, policy, knowledge);
    results.push({ day, fetched });
  }
  return { results, knowledge };
}

function counts(from: DayString, values: number[]): Map<DayString, number> {
  return new Map(values.map((value, i) => [addDays(from, i), value]));
}

describe('fetchDay learns the bounds from the items returned', () => {
  const cases = [
    ['inclusive', 'inclusive', DAY, DAY],
    ['inclusive', 'exclusive', DAY, addDays(DAY, 1)],
    ['exclusive', 'inclusive', addDays(DAY, -1), DAY],
    ['exclusive', 'exclusive', addDays(DAY, -1), addDays(DAY, 1)],
  ] as const;
  for (const [startdate, enddate, from, to] of cases) {
    it(`startdate ${startdate}, enddate ${enddate}: asks exactly ${from}..${to} once learned, and gets the whole day`, async () => {
      const server = new FakeServer(
        { ...UTC_INCLUSIVE, startdate, enddate },
        counts('2026-03-01', Array(14).fill(150)),
      );
      const { results, knowledge } = await fetchRange(server, daysFrom('2026-03-01', '2026-03-09'));
      for (const { day, fetched } of results) {
        expect(ids(fetched.onDay)).toEqual(server.itemsOn(day).sort());
        expect(fetched.truncated).toBe(false);
      }
      expect(startInclusive(knowledge.reading)).toBe(startdate === 'inclusive');
      expect(endInclusive(knowledge.reading)).toBe(enddate === 'inclusive');
      expect(requestFor(DAY, knowledge.reading)).toEqual({ startdate: from, enddate: to });
      expect(serverDay(knowledge.reading)).toBe('utc');
    });
  }

  it('on a quiet server whose day is not yet proved UTC, asks each day with its neighbours and still gets all of it', async () => {
    const server = new FakeServer(UTC_INCLUSIVE, counts('2026-03-01', [0, 1, 0, 2, 1, 0, 1, 0, 0, 1]));
    const { results, knowledge } = await fetchRange(server, daysFrom('2026-03-02', '2026-03-09'));
    for (const { day, fetched } of results)
      expect(ids(fetched.onDay), day).toEqual(server.itemsOn(day).sort());
    expect(serverDay(knowledge.reading)).toBe('unknown');
    const asked = requestFor(DAY, knowledge.reading);
    expect(asked.startdate < DAY || asked.enddate > DAY).toBe(true);
  });

  it('never lets a busy neighbour crowd a day out, newest first under a cap', async () => {
    // The day has 40 items, the next day 500; the server caps every answer at 100 and lists newest first.
    const server = new FakeServer(
      { ...UTC_INCLUSIVE, order: 'newest-first', cap: 100 },
      counts('2026-03-08', [30, 30, 40, 500, 30]),
    );
    const knowledge = fresh();
    await fetchDay(server.client(), 'feedback', '2026-03-08', POLICY, knowledge);
    const fetched = await fetchDay(server.client(), 'feedback', DAY, POLICY, knowledge);
    expect(ids(fetched.onDay)).toEqual(server.itemsOn(DAY).sort());
    expect(fetched.truncated).toBe(false);
  });
});

describe('fetchDay notices a server that changed its reading', () => {
  it('a reading learned in earlier runs (inclusive) that the server dropped (now exclusive) is learned again, and no day comes back empty', async () => {
    const data = counts('2026-03-01', Array(10).fill(150));
    const before = new FakeServer(UTC_INCLUSIVE, data);
    const learned = await fetchRange(before, daysFrom('2026-03-01', '2026-03-04'));
    expect(startInclusive(learned.knowledge.reading)).toBe(true);
    expect(requestFor(DAY, learned.knowledge.reading)).toEqual({ startdate: DAY, enddate: DAY });

    // The next run starts from the stored reading only (as run-sync seeds it from server_readings).
    const after = new FakeServer({ ...UTC_INCLUSIVE, startdate: 'exclusive', enddate: 'exclusive' }, data);
    const { results, knowledge } = await fetchRange(after, daysFrom('2026-03-05', '2026-03-08'), POLICY, {
      reading: { ...learned.knowledge.reading },
    });
    for (const { day, fetched } of results)
      expect(ids(fetched.onDay), day).toEqual(after.itemsOn(day).sort());
    expect(startInclusive(knowledge.reading)).toBe(false);
  });

  it('windows fetched side by side while one checks the reading wait for its verdict: none keeps an answer asked under the old one', async () => {
    const data = counts('2026-03-01', Array(12).fill(20));
    const learned = await fetchRange(
      new FakeServer(UTC_INCLUSIVE, data),
      daysFrom('2026-03-01', '2026-03-04'),
    );
    const after = new FakeServer({ ...UTC_INCLUSIVE, startdate: 'exclusive', enddate: 'exclusive' }, data);
    // One knowledge for the run, four windows at once (a worker's lanes, or an in-process run).
    const knowledge: ResourceKnowledge = { reading: { ...learned.knowledge.reading } };
    const days = daysFrom('2026-03-05', '2026-03-08');
    const fetched = await Promise.all(
      days.map((day) => fetchDay(after.client(10), 'feedback', day, POLICY, knowledge)),
    );
    expect(fetched.map((f) => ids(f.onDay))).toEqual(days.map((day) => after.itemsOn(day).sort()));
  });

  it('a reading learned on UTC days (startdate inclusive) that the server changed to UTC-5 days with an exclusive startdate: the check looks at every item the old request claimed, not at the day alone', async () => {
    // Two items a day at most: the day the run checks has none in the five hours the old request misses.
    const data = counts('2026-03-01', [2, 1, 2, 3, 2, 0, 1, 2, 3, 2, 1, 2, 2, 1, 2, 2, 1, 2, 3]);
    const before = new FakeServer({ ...UTC_INCLUSIVE, enddate: 'exclusive' }, data, 7);
    const learned = await fetchRange(before, daysFrom('2026-03-03', '2026-03-07'));
    expect(startInclusive(learned.knowledge.reading)).toBe(true);
    const after = new FakeServer({ ...UTC_INCLUSIVE, startdate: 'exclusive', offsetMinutes: -300 }, data, 7);
    const days = daysFrom('2026-03-08', '2026-03-16');
    const { results, knowledge } = await fetchRange(after, days, POLICY, {
      reading: { ...learned.knowledge.reading },
    });
    for (const { day, fetched } of results)
      expect(ids(fetched.onDay), day).toEqual(after.itemsOn(day).sort());
    expect(startInclusive(knowledge.reading)).toBe(false);
    expect(serverDay(knowledge.reading)).toBe('late');
    // Learned again from nothing, once: a worker stores such a reading over any other.
    expect(knowledge.relearned).toBe(1);
  });

  it('a reading learned sharp (one day asked) on a server now 5 h behind, with an exclusive startdate and a silent cap: every day whole, the reading learned again once', async () => {
    // The old request for a day now answers with the next day's items alone; the check's wider
    // request holds more than the cap.
    const data = counts('2026-03-01', Array(16).fill(150));
    const before = new FakeServer({ ...UTC_INCLUSIVE, enddate: 'exclusive' }, data);
    const learned = await fetchRange(before, daysFrom('2026-03-01', '2026-03-09'));
    expect(requestFor('2026-03-10', learned.knowledge.reading)).toEqual({
      startdate: '2026-03-10',
      enddate: '2026-03-11',
    });
    const after = new FakeServer(
      { ...UTC_INCLUSIVE, startdate: 'exclusive', cap: 300, offsetMinutes: -300 },
      data,
    );
    const { results, knowledge } = await fetchRange(after, daysFrom('2026-03-10', '2026-03-13'), POLICY, {
      reading: { ...learned.knowledge.reading },
    });
    for (const { day, fetched } of results)
      expect(ids(fetched.onDay), day).toEqual(after.itemsOn(day).sort());
    expect(knowledge.relearned).toBe(1);
  });

  it("a check settles the run only on the day's own items: a server now 5 h behind with an exclusive startdate answers the old request with the next day's items alone", async () => {
    // Quiet (0-3 items a day). The newest day is taken first, as a queued backfill does; it has
    // no item of its own in the check's answer, and the next day's items it holds are all there.
    const values = Array.from({ length: 16 }, (_, i) => (6 * 7 + i * 3) % 4);
    const data = counts('2026-11-08', values);
    const before = new FakeServer({ ...UTC_INCLUSIVE, enddate: 'exclusive' }, data, 6);
    const learned = await fetchRange(before, daysFrom('2026-11-09', '2026-11-13'));
    const after = new FakeServer(
      { ...UTC_INCLUSIVE, startdate: 'exclusive', cap: 30, maxLimit: 300, offsetMinutes: -300 },
      data,
      6,
    );
    const days = daysFrom('2026-11-14', '2026-11-22').reverse();
    const { results } = await fetchRange(after, days, POLICY, { reading: { ...learned.knowledge.reading } });
    for (const { day, fetched } of results)
      expect(ids(fetched.onDay), day).toEqual(after.itemsOn(day).sort());
  });

  it('a day without items proves nothing: the check is made again on a later day', async () => {
    const data = counts('2026-03-01', [20, 20, 20, 20, 0, 0, 20, 20, 20]);
    const learned = await fetchRange(
      new FakeServer(UTC_INCLUSIVE, data),
      daysFrom('2026-03-01', '2026-03-04'),
    );
    const after = new FakeServer({ ...UTC_INCLUSIVE, startdate: 'exclusive', enddate: 'exclusive' }, data);
    // The run's first two days are empty: the old request and the check's find nothing there.
    const { results, knowledge } = await fetchRange(after, daysFrom('2026-03-05', '2026-03-09'), POLICY, {
      reading: { ...learned.knowledge.reading },
    });
    for (const { day, fetched } of results)
      expect(ids(fetched.onDay), day).toEqual(after.itemsOn(day).sort());
    expect(knowledge.staleChecked).toBe(true);
    expect(startInclusive(knowledge.reading)).toBe(false);
  });

  it('checks once per run: a reading that still holds costs one request more', async () => {
    const data = counts('2026-03-01', Array(10).fill(150));
    const server = new FakeServer(UTC_INCLUSIVE, data);
    const learned = await fetchRange(server, daysFrom('2026-03-01', '2026-03-04'));
    const calls = server.calls.length;
    await fetchRange(server, daysFrom('2026-03-05', '2026-03-08'), POLICY, {
      reading: { ...learned.knowledge.reading },
    });
    expect(server.calls.length - calls).toBe(4 + 1);
  });

  it('a reading that still holds is not counted as learned again', async () => {
    const data = counts('2026-03-01', Array(10).fill(150));
    const server = new FakeServer(UTC_INCLUSIVE, data);
    const learned = await fetchRange(server, daysFrom('2026-03-01', '2026-03-04'));
    const { knowledge } = await fetchRange(server, daysFrom('2026-03-05', '2026-03-08'), POLICY, {
      reading: { ...learned.knowledge.reading },
    });
    expect(knowledge.staleChecked).toBe(true);
    expect(knowledge.relearned).toBeUndefined();
  });
});

describe('fetchDay detects caps from evidence', () => {
  /** A reading already proved: inclusive bounds, UTC days (items seen 1 min after and before midnight). */
  const provedUtc = (): ResourceKnowledge => ({
    reading: { ...emptyReading(), headMs: 60_000, tailMs: DAY_MS - 60_000 },
  });

  it('sees a silent cap below the limit asked (cap 100, limit 1000), flags the day above it, and no other', async () => {
    const values = [20, 30, 150, 25, 100, 10];
    const server = new FakeServer({ ...UTC_INCLUSIVE, cap: 100 }, counts('2026-03-01', values));
    const { results, knowledge } = await fetchRange(
      server,
      daysFrom('2026-03-01', '2026-03-06'),
      POLICY,
      provedUtc(),
    );
    expect(knowledge.reading.cap).toBe(100);
    const flagged = results.filter((r) => r.fetched.truncated).map((r) => r.day);
    // 2026-03-03 holds 150 (truly truncated); 2026-03-05 holds exactly 100: a false alarm, counted.
    expect(flagged).toContain('2026-03-03');
    expect(flagged.filter((day) => day !== '2026-03-05')).toEqual(['2026-03-03']);
    for (const { day, fetched } of results) {
      if (!fetched.truncated) expect(ids(fetched.onDay)).toEqual(server.itemsOn(day).sort());
    }
  });

  it('while the server day is not proved UTC, also flags a day next to a cut one (its last minutes may sit there)', async () => {
    const values = [20, 30, 150, 25, 100, 10];
    const server = new FakeServer({ ...UTC_INCLUSIVE, cap: 100 }, counts('2026-03-01', values));
    const { results } = await fetchRange(server, daysFrom('2026-03-01', '2026-03-06'));
    const flagged = results.filter((r) => r.fetched.truncated).map((r) => r.day);
    expect(flagged).toContain('2026-03-03');
    // Whatever else is flagged is a neighbour of a day at the cap; nothing unflagged is short.
    for (const day of flagged)
      expect(['2026-03-02', '2026-03-03', '2026-03-04', '2026-03-05', '2026-03-06']).toContain(day);
    for (const { day, fetched } of results) {
      if (!fetched.truncated) expect(ids(fetched.onDay)).toEqual(server.itemsOn(day).sort());
    }
  });

  it('does not take a whole day of exactly `limit` items for a cap, so later larger days load whole', async () => {
    const server = new FakeServer(UTC_INCLUSIVE, counts('2026-03-01', [5, 1000, 5, 3000, 5]));
    const { results, knowledge } = await fetchRange(server, daysFrom('2026-03-01', '2026-03-05'));
    expect(knowledge.reading.cap).toBeNull();
    for (const { day, fetched } of results) {
      expect(fetched.truncated).toBe(false);
      expect(fetched.onDay).toHaveLength(server.itemsOn(day).length);
    }
  });

  it('keeps a cap per resource: each resource has its own knowledge', async () => {
    const capped = new FakeServer({ ...UTC_INCLUSIVE, cap: 50 }, counts('2026-03-01', [10, 80, 10]));
    const open = new FakeServer(UTC_INCLUSIVE, counts('2026-03-01', [10, 80, 10]));
    const a = await fetchRange(capped, daysFrom('2026-03-01', '2026-03-03'));
    const b = await fetchRange(open, daysFrom('2026-03-01', '2026-03-03'));
    expect(a.knowledge.reading.cap).toBe(50);
    expect(b.knowledge.reading.cap).toBeNull();
    expect(b.results.every((r) => !r.fetched.truncated)).toBe(true);
  });

  it('steps down on a 400 above the server maximum and remembers it', async () => {
    const server = new FakeServer(
      { ...UTC_INCLUSIVE, maxLimit: 500 },
      counts('2026-03-01', [10, 300, 800, 10]),
    );
    const { results, knowledge } = await fetchRange(server, daysFrom('2026-03-01', '2026-03-04'));
    // Not the first refused (1000): the day of 800 items searched the gap for the maximum, one
    // more than the round 500 first (then the run's one retry of the refused): three 400s.
    expect(knowledge.reading.limitRefused).toBe(501);
    expect(server.calls.filter((call) => call.limit > 500).map((call) => call.limit)).toEqual([
      1000, 501, 501,
    ]);
    const busy = results.find((r) => r.day === '2026-03-03');
    expect(busy?.fetched.truncated).toBe(true);
    expect(busy?.fetched.requestedLimit).toBe(500);
    const ordinary = results.find((r) => r.day === '2026-03-02');
    expect(ordinary?.fetched.onDay).toHaveLength(300);
    expect(ordinary?.fetched.truncated).toBe(false);
  });

  it('reads whole every day a server maximum between two halvings serves whole (20: the limit steps 31, 15, 16, 23, 19, 21, 20)', async () => {
    // Instants refused: a day is read whole only by an answer to its own request below the limit.
    const sizes = [6, 5, 0, 14, 5, 15, 20, 12, 49, 45, 19, 4, 17, 8];
    const server = new FakeServer({ ...UTC_INCLUSIVE, maxLimit: 20 }, counts('2026-03-01', sizes));
    const days = daysFrom('2026-03-01', '2026-03-14');
    const { results, knowledge } = await fetchRange(server, days);
    // And side by side, as a run's windows: some answer the halving's 15 while others search.
    const knowledgeSideBySide = fresh();
    const sideBySide = await Promise.all(
      days.map(async (day) => ({
        day,
        fetched: await fetchDay(server.client(5), 'feedback', day, POLICY, knowledgeSideBySide),
      })),
    );
    for (const { reading } of [knowledge, knowledgeSideBySide]) {
      expect(reading.limitRefused).toBe(21);
      expect(reading.cap).toBeNull();
    }
    for (const { day, fetched } of [...results, ...sideBySide]) {
      const size = server.itemsOn(day).length;
      // Answers that filled the halving's 15 are no cap: the 15-item day is whole at 19.
      expect(fetched.truncated, day).toBe(size >= 20);
      expect(fetched.onDay.length, day).toBe(Math.min(size, 20));
    }
  });

  it('notices a raised cap: an answer above the proved cap clears it', async () => {
    const knowledge = fresh();
    const low = new FakeServer({ ...UTC_INCLUSIVE, cap: 50 }, counts('2026-03-01', [10, 80, 10, 200, 10]));
    await fetchRange(low, daysFrom('2026-03-01', '2026-03-03'), POLICY, knowledge);
    expect(knowledge.reading.cap).toBe(50);
    const raised = new FakeServer(
      { ...UTC_INCLUSIVE, cap: 1000 },
      counts('2026-03-01', [10, 80, 10, 200, 10]),
    );
    const fetched = await fetchDay(raised.client(), 'feedback', '2026-03-04', POLICY, knowledge);
    expect(fetched.truncated).toBe(false);
    expect(fetched.onDay).toHaveLength(200);
    expect(knowledge.reading.cap).toBeNull();
  });
});

describe('fetchDay on a server whose day is not UTC', () => {
  for (const offsetMinutes of [-300, 120, 330]) {
    for (const bounds of ['inclusive', 'exclusive'] as const) {
      it(`offset ${offsetMinutes} min, both bounds ${bounds}: every item of each day is returned`, async () => {
        const server = new FakeServer(
          { ...UTC_INCLUSIVE, startdate: bounds, enddate: bounds, offsetMinutes },
          counts('2026-03-01', Array(12).fill(12)),
        );
        const { results, knowledge } = await fetchRange(server, daysFrom('2026-03-02', '2026-03-11'));
        for (const { day, fetched } of results) {
          expect(ids(fetched.onDay), day).toEqual(server.itemsOn(day).sort());
        }
        expect(serverDay(knowledge.reading)).toBe(offsetMinutes < 0 ? 'late' : 'early');
      });
    }
  }
});

describe('fetchDay property: nothing missing unless flagged, under random readings', () => {
  it('holds for 300 random servers and data sets, and where instants are honoured no day is flagged', async () => {
    const reading = fc.record({
      startdate: fc.constantFrom('inclusive' as const, 'exclusive' as const),
      enddate: fc.constantFrom('inclusive' as const, 'exclusive' as const),
      order: fc.constantFrom('oldest-first' as const, 'newest-first' as const, 'random' as const),
      cap: fc.constantFrom(20, 50, 100, 1000, 100_000),
      maxLimit: fc.constantFrom(null, 30, 200),
      offsetMinutes: fc.constantFrom(0, 0, 0, -300, 120, 600, -720),
      instants: fc.constantFrom('refused' as const, 'ignored' as const, 'honoured' as const),
    });
    let falseAlarms = 0;
    let flagged = 0;
    let undecidable = 0;
    await fc.assert(
      fc.asyncProperty(
        reading,
        fc.array(fc.oneof(fc.integer({ min: 0, max: 15 }), fc.integer({ min: 0, max: 300 })), {
          minLength: 8,
          maxLength: 8,
        }),
        fc.integer({ min: 1, max: 1_000_000 }),
        async (r, values, seed) => {
          const data = counts('2026-03-01', values);
          const server = new FakeServer(r, data, seed);
          // A day alone in an empty fortnight cannot be told from a cap of its size: no request
          // around it returns anything else. The only misses allowed, and counted.
          const alone = (day: DayString) =>
            daysFrom(addDays(day, -8), addDays(day, 8)).every((other) => other === day || !data.get(other));
          const policy: LimitPolicy = { limit: 25, maxLimit: 400 };
          const { results } = await fetchRange(server, daysFrom('2026-03-02', '2026-03-07'), policy);
          for (const { day, fetched } of results) {
            const truth = server.itemsOn(day).sort();
            const got = ids(fetched.onDay);
            if (!fetched.truncated) {
              if (got.length < truth.length && alone(day)) undecidable += 1;
              else expect(got, `${JSON.stringify(r)} ${day}`).toEqual(truth);
            } else {
              // Where instants are honoured, a day above the cap is read in time slices, whole.
              expect(r.instants, `${JSON.stringify(r)} ${day} flagged`).not.toBe('honoured');
              flagged += 1;
              if (got.length === truth.length) falseAlarms += 1;
            }
          }
        },
      ),
      { numRuns: 300, seed: 20261122 },
    );
    // False alarms (a day of exactly the cap, or a split server day) stay a small share of the flags.
    // False alarms here come from days next to a cut day while the server's day is not yet proved
    // UTC (cap 20 against days of up to 300 items is harsher than any real server); on the
    // simulator's realistic data the matrix test counts them near 0. An empty day beside a cut one,
    // where no instants can ask it alone, is flagged rather than settled on an answer nothing
    // proved (the reading session): a few more false alarms, never a day settled short.
    console.info(
      `fetchDay property: ${flagged} days flagged, ${falseAlarms} false alarms, ${undecidable} undecidable`,
    );
    // A flagged day keeps what the server days it can read alone hold: some then hold every item
    // of theirs, still flagged, for nothing proves them whole (11 of 510 here). A cut answer in no
    // order counts as holding both ends (server-reading.ts, keptSide), so a bound that moved after
    // its items held it is taken as a deploy, which a day short under a rolling deploy needed:
    // on these caps of 20 and 50 the run's own learning is taken so a little more often, and
    // whole days are flagged (89 of 511 before, 97 of 519 after). The search for a server's
    // maximum limit asks other limits, so other answers are cut: 99 of 514.
    expect(falseAlarms).toBeLessThanOrEqual(Math.ceil(flagged * 0.2));
    expect(undecidable).toBeLessThan(flagged);
  }, 60_000);
});

describe('fetchDay side by side: instants cost a server that refuses or ignores them one request a run', () => {
  it('holds for 150 random servers with windows overlapping (the probe and an empty day check wait on each other)', async () => {
    const reading = fc.record({
      startdate: fc.constantFrom('inclusive' as const, 'exclusive' as const),
      enddate: fc.constantFrom('inclusive' as const, 'exclusive' as const),
      order: fc.constantFrom('oldest-first' as const, 'newest-first' as const, 'random' as const),
      cap: fc.constantFrom(20, 50),
      maxLimit: fc.constant(null),
      offsetMinutes: fc.constantFrom(0, 0, -300, 600),
      instants: fc.constantFrom('refused' as const, 'ignored' as const),
    });
    let asked = 0;
    await fc.assert(
      fc.asyncProperty(
        reading,
        // Busy days beside empty ones: the days that take both the probe and an empty day's check.
        fc.array(fc.constantFrom(0, 0, 3, 120, 300), { minLength: 10, maxLength: 10 }),
        fc.integer({ min: 1, max: 1_000_000 }),
        fc.integer({ min: 1, max: 4 }),
        async (r, values, seed, latencyMs) => {
          const server = new FakeServer(r, counts('2026-03-01', values), seed);
          const knowledge = fresh();
          const client = server.client(latencyMs);
          const policy: LimitPolicy = { limit: 25, maxLimit: 400 };
          await Promise.all(
            daysFrom('2026-03-02', '2026-03-09').map((day) =>
              fetchDay(client, 'feedback', day, policy, knowledge),
            ),
          );
          const withInstants = server.calls.filter((q) => q.startdate.length > 10 || q.enddate.length > 10);
          asked += withInstants.length;
          expect(withInstants.length, JSON.stringify({ r, values })).toBeLessThanOrEqual(1);
        },
      ),
      { numRuns: 150, seed: 20261128 },
    );
    // Not vacuous: the servers drawn were asked with instants at all.
    expect(asked).toBeGreaterThan(20);
  }, 60_000);
});
