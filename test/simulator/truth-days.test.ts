import { describe, expect, it } from 'vitest';
import { daysAboveCap, itemsPerDay, startSimulator } from '../../src/simulator/server.js';
import { getArray, LONG_RANGE, SHORT_RANGE, withSimulator } from './sim-helpers.js';

describe('itemsPerDay and daysAboveCap: which days a capped server truncates', () => {
  it('counts every served item per UTC day, malformed ones included', async () => {
    await withSimulator({ ...LONG_RANGE, malformedRate: 0.2 }, async (simulator) => {
      const truth = simulator.truth();
      for (const resource of ['feedback', 'survey', 'recordings'] as const) {
        const counts = itemsPerDay(truth, resource);
        expect([...counts.keys()]).toHaveLength(12);
        const total = [...counts.values()].reduce((sum, count) => sum + count, 0);
        expect(total).toBe(truth[resource].length + truth.malformed[resource].length);
      }
      expect(itemsPerDay(truth, 'feedback').get('2024-03-10')).toBe(1500);
      expect(itemsPerDay(truth, 'feedback').get('2024-03-03')).toBe(0);
    });
  });

  it('names exactly the days a one-day request cannot return whole', async () => {
    await withSimulator({ ...LONG_RANGE, caps: { survey: 6 } }, async (simulator) => {
      const truth = simulator.truth();
      expect(daysAboveCap(truth, 'feedback')).toEqual(['2024-03-10']);
      const truncated = daysAboveCap(truth, 'survey');
      expect(truncated.length).toBeGreaterThan(0);
      expect(truncated.length).toBeLessThan(12);
      for (const [day, count] of itemsPerDay(truth, 'survey')) {
        const served = await getArray(simulator, `/v1/survey?startdate=${day}&enddate=${day}`);
        expect(served).toHaveLength(Math.min(count, 6));
        expect(truncated.includes(day)).toBe(count > 6);
      }
      expect(daysAboveCap(truth, 'survey', 1000)).toEqual([]);
    });
  });

  it("counts by the server's day when the server is not on UTC", async () => {
    const simulator = await startSimulator({ ...SHORT_RANGE, dayOffsetMinutes: -300, cap: 3 });
    try {
      const truth = simulator.truth();
      const byServer = itemsPerDay(truth, 'feedback', 'server');
      expect([...byServer.keys()]).toEqual([
        '2024-02-29',
        '2024-03-01',
        '2024-03-02',
        '2024-03-03',
        '2024-03-04',
        '2024-03-05',
      ]);
      expect(itemsPerDay(truth, 'feedback', 'utc').size).toBe(5);
      for (const [day, count] of byServer) {
        const served = await getArray(simulator, `/v1/feedback?startdate=${day}&enddate=${day}`);
        expect(served).toHaveLength(Math.min(count, 3));
      }
      expect(daysAboveCap(truth, 'feedback')).toEqual(
        [...byServer].filter(([, count]) => count > 3).map(([day]) => day),
      );
    } finally {
      await simulator.stop();
    }
  });
});
