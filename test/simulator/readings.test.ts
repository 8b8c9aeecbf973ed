import { describe, expect, it } from 'vitest';
import { type GroundTruth, type Simulator, startSimulator } from '../../src/simulator/server.js';
import { addDays } from '../../src/time/days.js';
import { get, getArray, keyOf, LONG_RANGE, SHORT_RANGE, withSimulator } from './sim-helpers.js';

// Each reading of a spec gap (SPEC-GAPS.md) the simulator plays, proven over real HTTP.

const RESOURCES = ['feedback', 'survey', 'recordings'] as const;
type Item = Record<string, unknown>;

function onDays(items: ReadonlyArray<{ dt: string }>, days: readonly string[]): unknown[] {
  return items.filter((item) => days.some((day) => item.dt.startsWith(day)));
}

function sortedKeys(items: readonly Item[]): string[] {
  return items.map((item) => `${keyOf(item)}@${String(item.dt)}`).sort();
}

describe('startdate and enddate: the 2 x 2 readings', () => {
  // 2024-03-04 .. 2024-03-06 of the long range: ordinary days with items.
  const cases = [
    ['inclusive', 'inclusive', ['2024-03-04', '2024-03-05', '2024-03-06']],
    ['inclusive', 'exclusive', ['2024-03-04', '2024-03-05']],
    ['exclusive', 'inclusive', ['2024-03-05', '2024-03-06']],
    ['exclusive', 'exclusive', ['2024-03-05']],
  ] as const;

  it.each(cases)('startdate %s, enddate %s serves exactly %o', async (startdate, enddate, days) => {
    await withSimulator({ ...LONG_RANGE, startdate, enddate }, async (simulator) => {
      const truth = simulator.truth();
      for (const resource of RESOURCES) {
        const served = await getArray(simulator, `/v1/${resource}?startdate=2024-03-04&enddate=2024-03-06`);
        expect(served).toEqual(onDays(truth[resource], days));
      }
      expect(onDays(truth.feedback, ['2024-03-04']).length).toBeGreaterThan(0);
      expect(onDays(truth.feedback, ['2024-03-06']).length).toBeGreaterThan(0);
    });
  });

  it('answers 200 [] to a range left empty by exclusive bounds', async () => {
    await withSimulator({ startdate: 'exclusive' }, async (simulator) => {
      expect(await getArray(simulator, '/v1/feedback?startdate=2024-03-02&enddate=2024-03-02')).toEqual([]);
      simulator.setOptions({ enddate: 'exclusive' });
      expect(await getArray(simulator, '/v1/feedback?startdate=2024-03-01&enddate=2024-03-02')).toEqual([]);
      expect(await getArray(simulator, '/v1/feedback?startdate=2024-03-01&enddate=2024-03-03')).toEqual(
        onDays(simulator.truth().feedback, ['2024-03-02']),
      );
    });
  });
});

describe("order 'random'", () => {
  it('shuffles every request anew; the set stays the same', async () => {
    await withSimulator({ order: 'random' }, async (simulator) => {
      const truth = simulator.truth();
      for (const resource of RESOURCES) {
        const first = await getArray(simulator, `/v1/${resource}`);
        const second = await getArray(simulator, `/v1/${resource}`);
        expect(first).not.toEqual(second);
        expect(sortedKeys(first)).toEqual(sortedKeys(truth[resource] as Item[]));
        expect(sortedKeys(second)).toEqual(sortedKeys(first));
      }
    });
  });

  it('is replayable: the same seed and request sequence gives the same answers', async () => {
    const answers = async (): Promise<unknown[]> =>
      withSimulator({ order: 'random' }, async (simulator) => [
        await getArray(simulator, '/v1/feedback'),
        await getArray(simulator, '/v1/survey?startdate=2024-03-01&enddate=2024-03-02'),
      ]);
    expect(await answers()).toEqual(await answers());
  });

  it('cuts after shuffling: a capped answer is a random subset, not the oldest items', async () => {
    await withSimulator({ order: 'random', cap: 5 }, async (simulator) => {
      const truth = simulator.truth();
      const all = new Set(sortedKeys(truth.feedback as Item[]));
      const served = await getArray(simulator, '/v1/feedback?limit=50');
      expect(served).toHaveLength(5);
      for (const key of sortedKeys(served)) expect(all.has(key)).toBe(true);
      const samples = [
        served,
        ...(await Promise.all([1, 2, 3].map(() => getArray(simulator, '/v1/feedback')))),
      ];
      const oldest = sortedKeys(truth.feedback.slice(0, 5) as Item[]);
      expect(samples.some((sample) => sortedKeys(sample).join() !== oldest.join())).toBe(true);
    });
  });

  it('newest-first with a cap over several days returns the newest items', async () => {
    await withSimulator({ order: 'newest-first', cap: 3 }, async (simulator) => {
      const truth = simulator.truth();
      const served = await getArray(simulator, '/v1/survey?startdate=2024-03-01&enddate=2024-03-05');
      expect(served).toEqual([...truth.survey].reverse().slice(0, 3));
    });
  });
});

describe('per-resource caps', () => {
  it('cuts one resource silently at its own cap and leaves the others at the global cap', async () => {
    await withSimulator({ caps: { feedback: 3, recordings: 2 } }, async (simulator) => {
      const truth = simulator.truth();
      expect(truth.meta.caps).toEqual({ feedback: 3, survey: 1000, recordings: 2 });
      expect(await getArray(simulator, '/v1/feedback?limit=100')).toEqual(truth.feedback.slice(0, 3));
      expect(await getArray(simulator, '/v1/feedback?limit=2')).toEqual(truth.feedback.slice(0, 2));
      expect(await getArray(simulator, '/v1/recordings')).toEqual(truth.recordings.slice(0, 2));
      expect(await getArray(simulator, '/v1/survey?limit=100')).toEqual(truth.survey.slice(0, 100));
      simulator.setOptions({ caps: { survey: 4 }, cap: 6 });
      expect(await getArray(simulator, '/v1/survey?limit=100')).toHaveLength(4);
      expect(await getArray(simulator, '/v1/feedback?limit=100')).toHaveLength(6);
    });
  });
});

describe('maxLimit', () => {
  it('answers 400 to a limit above the maximum, and serves at or below it', async () => {
    await withSimulator({ maxLimit: 50 }, async (simulator) => {
      for (const resource of RESOURCES) {
        const refused = await get(simulator, `/v1/${resource}?limit=51`);
        expect(refused.status).toBe(400);
        expect(refused.body).toEqual({ error: 'bad_request', message: 'limit must be at most 50' });
        expect((await get(simulator, `/v1/${resource}?limit=50`)).status).toBe(200);
        expect((await get(simulator, `/v1/${resource}`)).status).toBe(200);
      }
      simulator.setOptions({ maxLimit: null });
      expect((await get(simulator, '/v1/feedback?limit=5000')).status).toBe(200);
    });
  });
});

describe('dayOffsetMinutes: the server filters by its own day', () => {
  const HOUR = 3_600_000;
  const inSpan = (truth: GroundTruth, resource: (typeof RESOURCES)[number], startMs: number, endMs: number) =>
    (truth[resource] as Array<{ dt: string }>).filter((item) => {
      const at = Date.parse(item.dt);
      return at >= startMs && at < endMs;
    });

  it.each([
    [-300, 5],
    [330, -5.5],
    [720, -12],
    [-840, 14],
  ])('offset %i: server day D runs from D %s h UTC', async (offset, startHour) => {
    await withSimulator({ ...LONG_RANGE, dayOffsetMinutes: offset }, async (simulator) => {
      const truth = simulator.truth();
      for (const day of ['2024-03-04', '2024-03-05']) {
        const startMs = Date.parse(`${day}T00:00:00.000Z`) + startHour * HOUR;
        for (const resource of RESOURCES) {
          const served = await getArray(simulator, `/v1/${resource}?startdate=${day}&enddate=${day}`);
          expect(served).toEqual(inSpan(truth, resource, startMs, startMs + 24 * HOUR));
        }
      }
    });
  });

  it('moves the items near UTC midnight to the neighbouring server day, keeping their UTC dt', async () => {
    await withSimulator({ ...LONG_RANGE, dayOffsetMinutes: -300 }, async (simulator) => {
      const truth = simulator.truth();
      // Items in the first five hours of a UTC day belong to the server's previous day.
      const early = truth.feedback.filter((item) => item.dt.slice(11, 13) < '05');
      expect(early.length).toBeGreaterThan(0);
      for (const item of early.slice(0, 5)) {
        const utcDay = item.dt.slice(0, 10);
        const previous = new Date(Date.parse(`${utcDay}T00:00:00Z`) - 86_400_000).toISOString().slice(0, 10);
        const ownDay = await getArray(simulator, `/v1/feedback?startdate=${utcDay}&enddate=${utcDay}`);
        const dayBefore = await getArray(simulator, `/v1/feedback?startdate=${previous}&enddate=${previous}`);
        expect(ownDay.map(keyOf)).not.toContain(keyOf(item));
        expect(dayBefore).toContainEqual(item);
      }
    });
  });

  it('serves only data from..to: the edge server days hold part of a UTC day', async () => {
    await withSimulator({ ...SHORT_RANGE, dayOffsetMinutes: -300 }, async (simulator) => {
      const truth = simulator.truth();
      const beforeFirst = await getArray(simulator, '/v1/feedback?startdate=2024-02-29&enddate=2024-02-29');
      expect(beforeFirst).toEqual(truth.feedback.filter((item) => item.dt < '2024-03-01T05:00:00.000Z'));
      const last = await getArray(simulator, '/v1/feedback?startdate=2024-03-05&enddate=2024-03-05');
      expect(last).toEqual(truth.feedback.filter((item) => item.dt >= '2024-03-05T05:00:00.000Z'));
      expect(truth.meta.itemsPerServerDay.feedback['2024-02-29']).toBe(beforeFirst.length);
    });
  });

  it('one request per server day over the whole range returns every item exactly once', async () => {
    await withSimulator(
      { ...SHORT_RANGE, dayOffsetMinutes: 180, startdate: 'exclusive' },
      async (simulator) => {
        const truth = simulator.truth();
        const serverDays = Object.keys(truth.meta.itemsPerServerDay.recordings);
        expect(serverDays).toEqual([
          '2024-03-01',
          '2024-03-02',
          '2024-03-03',
          '2024-03-04',
          '2024-03-05',
          '2024-03-06',
        ]);
        const all: Item[] = [];
        for (const day of serverDays) {
          const before = new Date(Date.parse(`${day}T00:00:00Z`) - 86_400_000).toISOString().slice(0, 10);
          const served = await getArray(simulator, `/v1/recordings?startdate=${before}&enddate=${day}`);
          expect(served).toHaveLength(truth.meta.itemsPerServerDay.recordings[day] ?? -1);
          all.push(...served);
        }
        expect(all).toEqual(truth.recordings);
      },
    );
  });
});

describe("dayZone: the server's days follow a zone's clock, daylight saving included", () => {
  // Europe/Berlin: UTC+1 in winter, UTC+2 in summer; the clock goes forward on 2026-03-29 (a day
  // of 23 hours) and back on 2026-10-25 (25 hours).
  const cases = [
    ['2026-03-28', '2026-03-27T23:00:00.000Z', '2026-03-28T23:00:00.000Z'],
    ['2026-03-29', '2026-03-28T23:00:00.000Z', '2026-03-29T22:00:00.000Z'],
    ['2026-03-30', '2026-03-29T22:00:00.000Z', '2026-03-30T22:00:00.000Z'],
    ['2026-10-25', '2026-10-24T22:00:00.000Z', '2026-10-25T23:00:00.000Z'],
    ['2026-10-27', '2026-10-26T23:00:00.000Z', '2026-10-27T23:00:00.000Z'],
  ] as const;

  it.each(cases)('server day %s runs from %s to %s', async (day, start, end) => {
    // The day sits 4th: the simulator leaves the 3rd day of a range empty.
    const range = { from: addDays(day, -3), to: addDays(day, 2) };
    await withSimulator({ ...range, dayZone: 'Europe/Berlin', startdate: 'inclusive' }, async (simulator) => {
      const truth = simulator.truth();
      let items = 0;
      for (const resource of RESOURCES) {
        const served = await getArray(simulator, `/v1/${resource}?startdate=${day}&enddate=${day}`);
        const expected = (truth[resource] as Item[]).filter((item) => {
          const dt = String(item.dt);
          return dt >= start && dt < end;
        });
        expect(sortedKeys(served as Item[])).toEqual(sortedKeys(expected));
        expect(truth.meta.itemsPerServerDay[resource][day]).toBe(expected.length);
        items += expected.length;
      }
      expect(items).toBeGreaterThan(0);
    });
  });

  it('is refused when it names no zone, or comes with a fixed offset', async () => {
    await expect(startSimulator({ ...SHORT_RANGE, dayZone: 'Europe/Atlantis' })).rejects.toThrow(
      /dayZone must be a time zone name/,
    );
    await expect(
      startSimulator({ ...SHORT_RANGE, dayZone: 'Europe/Berlin', dayOffsetMinutes: 60 }),
    ).rejects.toThrow(/dayZone must be alone/);
  });
});

describe('reuseIds: keys collide across days', () => {
  async function dayItems(simulator: Simulator, day: string): Promise<Record<string, Item[]>> {
    const items: Record<string, Item[]> = {};
    for (const resource of RESOURCES) {
      items[resource] = await getArray(simulator, `/v1/${resource}?startdate=${day}&enddate=${day}`);
    }
    return items;
  }

  it('at share 1 every day after the first takes the previous day’s keys by position', async () => {
    await withSimulator({ ...LONG_RANGE, reuseIds: 1, cap: 5000 }, async (simulator) => {
      const truth = simulator.truth();
      expect(truth.meta.reusedIdDays).toEqual(LONG_RANGE_DAYS.slice(1));
      const previous = await dayItems(simulator, '2024-03-04');
      const current = await dayItems(simulator, '2024-03-05');
      for (const resource of RESOURCES) {
        const before = previous[resource] ?? [];
        const now = current[resource] ?? [];
        const shared = Math.min(before.length, now.length);
        expect(shared).toBeGreaterThan(0);
        const beforeKeys = new Set(before.map(keyOf));
        const reused = now.filter((item) => beforeKeys.has(keyOf(item)));
        expect(reused).toHaveLength(shared);
        for (const item of reused) {
          const twin = before.find((other) => keyOf(other) === keyOf(item));
          expect(twin?.dt).not.toBe(item.dt);
        }
      }
      // Truth lists every served item: keys repeat, (key, dt) does not.
      for (const resource of RESOURCES) {
        const items = truth[resource] as Item[];
        expect(new Set(items.map(keyOf)).size).toBeLessThan(items.length);
        expect(new Set(sortedKeys(items)).size).toBe(items.length);
        expect(await getArray(simulator, `/v1/${resource}`)).toEqual(items);
      }
    });
  });

  it('picks a share of days from the seed, and a cold request for a late day agrees with truth', async () => {
    const late = await withSimulator({ ...LONG_RANGE, reuseIds: 0.5 }, async (simulator) =>
      getArray(simulator, '/v1/feedback?startdate=2024-03-12&enddate=2024-03-12'),
    );
    await withSimulator({ ...LONG_RANGE, reuseIds: 0.5 }, async (simulator) => {
      const truth = simulator.truth();
      expect(truth.meta.reusedIdDays.length).toBeGreaterThan(0);
      expect(truth.meta.reusedIdDays.length).toBeLessThan(11);
      expect(late).toEqual(truth.feedback.filter((item) => item.dt.startsWith('2024-03-12')));
      const keysByDay = new Map<string, Set<string>>();
      for (const item of truth.feedback) {
        const day = item.dt.slice(0, 10);
        keysByDay.set(day, (keysByDay.get(day) ?? new Set()).add(keyOf(item)));
      }
      for (const day of truth.meta.reusedIdDays) {
        const previous = new Date(Date.parse(`${day}T00:00:00Z`) - 86_400_000).toISOString().slice(0, 10);
        const mine = keysByDay.get(day) ?? new Set();
        const theirs = keysByDay.get(previous) ?? new Set();
        if (mine.size > 0 && theirs.size > 0) expect([...mine].some((key) => theirs.has(key))).toBe(true);
      }
    });
  });

  it('stays in step with truth after advance() adds late items', async () => {
    await withSimulator({ reuseIds: 1 }, async (simulator) => {
      const before = simulator.truth();
      await getArray(simulator, '/v1/survey');
      const report = simulator.advance();
      const truth = simulator.truth();
      for (const resource of RESOURCES) {
        expect(truth[resource].length).toBe(before[resource].length + report.late[resource]);
        expect(await getArray(simulator, `/v1/${resource}`)).toEqual(truth[resource]);
      }
    });
  });

  it('can be switched at run time', async () => {
    const simulator = await startSimulator({ ...SHORT_RANGE });
    try {
      const plain = simulator.truth().feedback;
      expect(new Set(plain.map(keyOf)).size).toBe(plain.length);
      simulator.setOptions({ reuseIds: 1 });
      const reused = simulator.truth().feedback;
      expect(new Set(reused.map(keyOf)).size).toBeLessThan(reused.length);
      expect(await getArray(simulator, '/v1/feedback')).toEqual(reused);
    } finally {
      await simulator.stop();
    }
  });
});

const LONG_RANGE_DAYS = Array.from({ length: 12 }, (_, i) => `2024-03-${String(i + 1).padStart(2, '0')}`);
