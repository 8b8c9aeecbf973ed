import { describe, expect, it } from 'vitest';
import { getArray, keyOf, LONG_RANGE, SHORT_RANGE, withSimulator } from './sim-helpers.js';

const RESOURCES = ['feedback', 'survey', 'recordings'] as const;

function onDay(items: ReadonlyArray<{ dt: string }>, day: string): unknown[] {
  return items.filter((item) => item.dt.startsWith(day));
}

describe('date windows: startdate and enddate', () => {
  it("'inclusive' (default) serves startdate's day through the whole of enddate's day", async () => {
    await withSimulator({}, async (simulator) => {
      const truth = simulator.truth();
      for (const resource of RESOURCES) {
        const oneDay = await getArray(simulator, `/v1/${resource}?startdate=2024-03-02&enddate=2024-03-02`);
        expect(oneDay).toEqual(onDay(truth[resource], '2024-03-02'));
        expect(oneDay.length).toBeGreaterThan(0);
        const twoDays = await getArray(simulator, `/v1/${resource}?startdate=2024-03-04&enddate=2024-03-05`);
        expect(twoDays).toEqual([
          ...onDay(truth[resource], '2024-03-04'),
          ...onDay(truth[resource], '2024-03-05'),
        ]);
      }
    });
  });

  it("'exclusive' leaves enddate's day out, so startdate=D&enddate=D is empty", async () => {
    await withSimulator({ enddate: 'exclusive' }, async (simulator) => {
      const truth = simulator.truth();
      for (const resource of RESOURCES) {
        expect(await getArray(simulator, `/v1/${resource}?startdate=2024-03-02&enddate=2024-03-02`)).toEqual(
          [],
        );
        expect(await getArray(simulator, `/v1/${resource}?startdate=2024-03-02&enddate=2024-03-03`)).toEqual(
          onDay(truth[resource], '2024-03-02'),
        );
      }
    });
  });

  it('can switch between the two modes at run time', async () => {
    await withSimulator({}, async (simulator) => {
      const path = '/v1/feedback?startdate=2024-03-02&enddate=2024-03-02';
      expect((await getArray(simulator, path)).length).toBeGreaterThan(0);
      simulator.setOptions({ enddate: 'exclusive' });
      expect(await getArray(simulator, path)).toEqual([]);
    });
  });

  it('serves everything when a bound is missing, and nothing outside the data range', async () => {
    await withSimulator({}, async (simulator) => {
      const truth = simulator.truth();
      expect(await getArray(simulator, '/v1/feedback')).toEqual(truth.feedback);
      expect(await getArray(simulator, '/v1/feedback?startdate=2024-03-04')).toEqual([
        ...onDay(truth.feedback, '2024-03-04'),
        ...onDay(truth.feedback, '2024-03-05'),
      ]);
      expect(await getArray(simulator, '/v1/feedback?enddate=2024-03-01')).toEqual(
        onDay(truth.feedback, '2024-03-01'),
      );
      expect(await getArray(simulator, '/v1/feedback?startdate=2020-01-01&enddate=2030-01-01')).toEqual(
        truth.feedback,
      );
      expect(await getArray(simulator, '/v1/feedback?startdate=2025-01-01&enddate=2025-01-31')).toEqual([]);
      expect(await getArray(simulator, '/v1/feedback?startdate=2024-03-05&enddate=2024-03-01')).toEqual([]);
    });
  });

  it('serves an empty array for the empty day', async () => {
    await withSimulator({}, async (simulator) => {
      expect(simulator.truth().meta.emptyDays).toContain('2024-03-03');
      for (const resource of RESOURCES) {
        expect(await getArray(simulator, `/v1/${resource}?startdate=2024-03-03&enddate=2024-03-03`)).toEqual(
          [],
        );
      }
    });
  });
});

describe('ordering', () => {
  it("'oldest-first' (default) orders by dt, ties by id", async () => {
    await withSimulator({}, async (simulator) => {
      for (const resource of RESOURCES) {
        const items = await getArray(simulator, `/v1/${resource}`);
        for (let i = 1; i < items.length; i++) {
          const [a, b] = [items[i - 1], items[i]] as Array<Record<string, unknown>>;
          const order = String(a?.dt).localeCompare(String(b?.dt));
          expect(order <= 0, `${resource} item ${i} is not after item ${i - 1}`).toBe(true);
        }
      }
    });
  });

  it("'newest-first' serves the exact reverse", async () => {
    await withSimulator({}, async (oldest) => {
      await withSimulator({ order: 'newest-first' }, async (newest) => {
        for (const resource of RESOURCES) {
          const forward = await getArray(oldest, `/v1/${resource}`);
          expect(await getArray(newest, `/v1/${resource}`)).toEqual([...forward].reverse());
        }
      });
    });
  });
});

describe('limit and the server-side cap', () => {
  it('cuts a response to limit', async () => {
    await withSimulator({}, async (simulator) => {
      const truth = simulator.truth();
      expect(await getArray(simulator, '/v1/feedback?limit=3')).toEqual(truth.feedback.slice(0, 3));
      expect(await getArray(simulator, '/v1/survey?limit=1')).toEqual(truth.survey.slice(0, 1));
    });
  });

  it('silently returns at most cap items when limit is larger or missing', async () => {
    await withSimulator({ cap: 5 }, async (simulator) => {
      const truth = simulator.truth();
      for (const resource of RESOURCES) {
        expect(truth[resource].length).toBeGreaterThan(5);
        expect(await getArray(simulator, `/v1/${resource}`)).toEqual(truth[resource].slice(0, 5));
        expect(await getArray(simulator, `/v1/${resource}?limit=100`)).toEqual(truth[resource].slice(0, 5));
        expect(await getArray(simulator, `/v1/${resource}?limit=2`)).toEqual(truth[resource].slice(0, 2));
      }
    });
  });

  it('caps the newest items in newest-first order', async () => {
    await withSimulator({ cap: 4, order: 'newest-first' }, async (simulator) => {
      const truth = simulator.truth();
      expect(await getArray(simulator, '/v1/recordings')).toEqual(
        [...truth.recordings].reverse().slice(0, 4),
      );
    });
  });

  it('cuts the busy day to the default cap of 1000, whatever limit asks for', async () => {
    await withSimulator({ ...LONG_RANGE }, async (simulator) => {
      const { busyDay } = simulator.truth().meta;
      const all = onDay(simulator.truth().feedback, String(busyDay));
      expect(all.length).toBe(1500);
      const window = `/v1/feedback?startdate=${busyDay}&enddate=${busyDay}`;
      const served = await getArray(simulator, window);
      expect(served).toHaveLength(1000);
      expect(served).toEqual(all.slice(0, 1000));
      expect(await getArray(simulator, `${window}&limit=5000`)).toHaveLength(1000);
      simulator.setOptions({ cap: 2000 });
      expect((await getArray(simulator, window)).map(keyOf)).toEqual(
        (all as Array<Record<string, unknown>>).map(keyOf),
      );
    });
  });

  it('never serves a window beyond the simulated range', async () => {
    await withSimulator({ ...SHORT_RANGE }, async (simulator) => {
      const served = await getArray(simulator, '/v1/recordings?startdate=2024-02-01&enddate=2024-03-01');
      for (const item of served) expect(String(item.dt).startsWith('2024-03-01')).toBe(true);
    });
  });
});
