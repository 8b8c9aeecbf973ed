import { describe, expect, it } from 'vitest';
import type { ApiClient, WindowQuery } from '../../src/api/api-client.js';
import { addDays, type DayString } from '../../src/extract/days.js';
import { type FetchedDay, fetchDay, type LimitPolicy } from '../../src/extract/fetch-day.js';

/**
 * A fake source API. The spec leaves open whether enddate is inclusive, the order of the items
 * and the largest limit the server honours (spec 4 and 8), so each of those is configurable.
 */
interface Semantics {
  enddate: 'inclusive' | 'exclusive';
  order: 'oldest-first' | 'newest-first';
  /** The server returns at most min(limit, cap) items. */
  cap: number;
}

interface StoredItem {
  /** The day the server files the item under (also for items whose dt is missing or garbage). */
  day: DayString;
  /** Position within the day, for ordering. */
  seq: number;
  item: unknown;
}

class FakeServer {
  readonly calls: WindowQuery[] = [];
  private readonly items: StoredItem[] = [];

  constructor(private readonly semantics: Semantics) {}

  /** `count` items `{ dt, id }` spread over the day, one second apart from midnight UTC. */
  addDay(day: DayString, count: number): this {
    const midnight = Date.parse(`${day}T00:00:00.000Z`);
    for (let i = 0; i < count; i++) {
      this.add(day, { id: `${day}#${i}`, dt: new Date(midnight + i * 1000).toISOString() });
    }
    return this;
  }

  add(day: DayString, item: unknown): this {
    this.items.push({ day, seq: this.items.length, item });
    return this;
  }

  client(): ApiClient {
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
      window: async (_resource, query) => this.window(query),
    };
  }

  private window(query: WindowQuery): unknown[] {
    this.calls.push({ ...query });
    const { enddate, order, cap } = this.semantics;
    const inWindow = this.items.filter(
      (stored) =>
        stored.day >= query.startdate &&
        (enddate === 'inclusive' ? stored.day <= query.enddate : stored.day < query.enddate),
    );
    inWindow.sort((a, b) => (a.day === b.day ? a.seq - b.seq : a.day < b.day ? -1 : 1));
    if (order === 'newest-first') inWindow.reverse();
    return inWindow.slice(0, Math.min(query.limit, cap)).map((stored) => stored.item);
  }
}

const DAY = '2026-03-10';
const PREVIOUS = addDays(DAY, -1);
const NEXT = addDays(DAY, 1);

/** Requests ask 10, then 40, 160, 640 and finally 1000. */
const POLICY: LimitPolicy = { limit: 10, maxLimit: 1000 };
/** A cap the escalation meets exactly (one of the limits it asks for). */
const STEP_CAP = 160;

function idsOf(result: FetchedDay): string[] {
  return result.items.map((item) => (item as { id: string }).id).sort();
}

function expectedIds(day: DayString, count: number): string[] {
  return Array.from({ length: count }, (_, i) => `${day}#${i}`).sort();
}

function allOnDay(result: FetchedDay, day: DayString): boolean {
  return result.items.every((item) => (item as { dt: string }).dt.startsWith(day));
}

const COMBINATIONS: Semantics[] = [];
for (const enddate of ['inclusive', 'exclusive'] as const) {
  for (const order of ['oldest-first', 'newest-first'] as const) {
    for (const cap of [Number.POSITIVE_INFINITY, STEP_CAP]) COMBINATIONS.push({ enddate, order, cap });
  }
}

const label = (s: Semantics) =>
  `enddate ${s.enddate}, ${s.order}, ${Number.isFinite(s.cap) ? `capped at ${s.cap}` : 'uncapped'}`;

describe('fetchDay', () => {
  for (const semantics of COMBINATIONS) {
    describe(label(semantics), () => {
      const capped = Number.isFinite(semantics.cap);

      it("returns exactly the day's items in one request, none of the neighbours'", async () => {
        const server = new FakeServer(semantics).addDay(PREVIOUS, 3).addDay(DAY, 4).addDay(NEXT, 3);
        const result = await fetchDay(server.client(), 'feedback', DAY, POLICY);
        expect(idsOf(result)).toEqual(expectedIds(DAY, 4));
        expect(result).toMatchObject({ truncated: false, requests: 1, requestedLimit: 10 });
        expect(server.calls).toHaveLength(result.requests);
      });

      it('returns a day above the first limit but below maxLimit whole, after escalating', async () => {
        // 100 + 20 stays below the step cap, so even an inclusive capped server can answer whole.
        const server = new FakeServer(semantics).addDay(PREVIOUS, 20).addDay(DAY, 100).addDay(NEXT, 20);
        const result = await fetchDay(server.client(), 'feedback', DAY, POLICY);
        expect(idsOf(result)).toEqual(expectedIds(DAY, 100));
        expect(result.truncated).toBe(false);
        expect(result.requestedLimit).toBe(160);
        expect(result.requests).toBe(server.calls.length);
        // Escalation 10 -> 40 -> 160 (after a switch to startdate=enddate=day where the server
        // proves it is inclusive), then a probe with the day before, to tell a cap between two
        // limits from a whole day.
        expect([...new Set(server.calls.map((call) => call.limit))]).toEqual([10, 40, 160]);
        expect(server.calls.at(-1)).toEqual({ startdate: PREVIOUS, enddate: NEXT, limit: 160 });
      });

      it('reports a day above maxLimit as truncated', async () => {
        const server = new FakeServer(semantics).addDay(DAY, 1200).addDay(NEXT, 50);
        const result = await fetchDay(server.client(), 'feedback', DAY, POLICY);
        expect(result.truncated).toBe(true);
        expect(allOnDay(result, DAY)).toBe(true);
        expect(result.items).toHaveLength(Math.min(POLICY.maxLimit, semantics.cap));
        expect(result.requests).toBe(server.calls.length);
      });

      if (capped) {
        it('reports a day above the server cap (and below maxLimit) as truncated, not complete', async () => {
          const server = new FakeServer(semantics).addDay(DAY, 500).addDay(NEXT, 50);
          const result = await fetchDay(server.client(), 'feedback', DAY, POLICY);
          expect(result.truncated).toBe(true);
          expect(allOnDay(result, DAY)).toBe(true);
          expect(result.items).toHaveLength(STEP_CAP);
          expect(result.requests).toBe(server.calls.length);
        });
      }

      it('keeps every item of a small day followed by a busy day', async () => {
        // The busy day is above both the cap and maxLimit: newest-first and inclusive, it fills
        // every wide response, and only the narrowed request (startdate=enddate=day) finds the day.
        const server = new FakeServer(semantics).addDay(DAY, 5).addDay(NEXT, 2000);
        const result = await fetchDay(server.client(), 'feedback', DAY, POLICY);
        expect(idsOf(result)).toEqual(expectedIds(DAY, 5));
        expect(result.truncated).toBe(false);
        expect(result.requests).toBe(server.calls.length);
      });

      it('keeps items whose dt is missing or unreadable, for validation to reject', async () => {
        const odd: unknown[] = [
          { id: 'no-dt' },
          { id: 'number-dt', dt: 42 },
          { id: 'word-dt', dt: 'yesterday' },
          null,
        ];
        const server = new FakeServer(semantics).addDay(DAY, 3).addDay(NEXT, 3);
        for (const item of odd) server.add(DAY, item);
        const result = await fetchDay(server.client(), 'feedback', DAY, POLICY);
        expect(result.items).toHaveLength(3 + odd.length);
        for (const item of odd) expect(result.items).toContain(item);
        expect(
          result.items.filter((item) => (item as { dt?: unknown } | null)?.dt === undefined),
        ).toHaveLength(2);
        expect(result.truncated).toBe(false);
      });
    });
  }

  it('asks startdate=day, enddate=day+1 and, once a full response holds next-day items, startdate=enddate=day', async () => {
    const server = new FakeServer({
      enddate: 'inclusive',
      order: 'newest-first',
      cap: Number.POSITIVE_INFINITY,
    })
      .addDay(DAY, 5)
      .addDay(NEXT, 2000);
    await fetchDay(server.client(), 'survey', DAY, { limit: 100, maxLimit: 400 });
    expect(server.calls).toEqual([
      { startdate: DAY, enddate: NEXT, limit: 100 },
      { startdate: DAY, enddate: DAY, limit: 100 },
    ]);
  });

  it('never asks for more than maxLimit, even when the first limit is larger', async () => {
    const server = new FakeServer({
      enddate: 'exclusive',
      order: 'oldest-first',
      cap: Number.POSITIVE_INFINITY,
    }).addDay(DAY, 50);
    const result = await fetchDay(server.client(), 'recordings', DAY, { limit: 500, maxLimit: 30 });
    expect(server.calls.every((call) => call.limit <= 30)).toBe(true);
    expect(result.truncated).toBe(true);
  });

  it('reports an empty day before a busy day as empty and complete (inclusive server)', async () => {
    // The narrowed request answers nothing here, as an exclusive server would: only the next day's
    // items in the wide response tell the two apart.
    const server = new FakeServer({
      enddate: 'inclusive',
      order: 'newest-first',
      cap: Number.POSITIVE_INFINITY,
    }).addDay(NEXT, 2000);
    const result = await fetchDay(server.client(), 'feedback', DAY, POLICY);
    expect(result.items).toEqual([]);
    expect(result.truncated).toBe(false);
  });
});

/**
 * Known issue: a cap is only recognised when it equals one of the limits asked for (10, 40, 160...):
 * a cap of 100 answers the limit-160 request with 100 items, which reads as "the day has 100 items".
 */
describe('fetchDay against a server cap between two requested limits', () => {
  const CAP = 100;
  for (const enddate of ['inclusive', 'exclusive'] as const) {
    for (const order of ['oldest-first', 'newest-first'] as const) {
      it(`reports a day of 150 items truncated when the server caps at ${CAP} (enddate ${enddate}, ${order})`, async () => {
        // Neighbouring days with items let the probes prove the cap. (When the server's order hides
        // the only non-empty neighbour, or both are empty, a capped response and a whole day of
        // exactly that size cannot be told apart: the day then counts as whole.)
        const server = new FakeServer({ enddate, order, cap: CAP })
          .addDay(PREVIOUS, 30)
          .addDay(DAY, 150)
          .addDay(NEXT, 30);
        const result = await fetchDay(server.client(), 'feedback', DAY, POLICY);
        expect(result.items).toHaveLength(CAP);
        expect(result.truncated).toBe(true);
      });
    }
  }

  it('keeps every item of a small day followed by a day above the cap (inclusive, newest-first)', async () => {
    const server = new FakeServer({ enddate: 'inclusive', order: 'newest-first', cap: CAP })
      .addDay(DAY, 5)
      .addDay(NEXT, 2000);
    const result = await fetchDay(server.client(), 'feedback', DAY, POLICY);
    expect(idsOf(result)).toEqual(expectedIds(DAY, 5));
  });
});
