import { describe, expect, it } from 'vitest';
import { get, getArray, LONG_RANGE, withSimulator } from './sim-helpers.js';

// The paging gap (SPEC-GAPS.md): an ISO instant in startdate or enddate, honoured at each
// inclusivity, ignored or refused; and the limit a request without one gets.

const DAY = '2024-03-10';
type Item = { dt: string } & Record<string, unknown>;

const at = (ms: number) => new Date(ms).toISOString();
const query = (start: string, end: string) =>
  `/v1/feedback?startdate=${encodeURIComponent(start)}&enddate=${encodeURIComponent(end)}&limit=4000`;

describe('instants in startdate and enddate', () => {
  it("'honoured' filters by the instants, with startdate's and enddate's inclusivity at them", async () => {
    await withSimulator({ ...LONG_RANGE, instants: 'honoured' }, async (simulator) => {
      const dayItems = simulator.truth().feedback.filter((item) => item.dt.startsWith(DAY)) as Item[];
      // Bounds exactly at two items' instants, so each inclusivity shows.
      const first = dayItems[100] as Item;
      const last = dayItems[200] as Item;
      const from = Date.parse(first.dt);
      const to = Date.parse(last.dt);
      for (const startdate of ['inclusive', 'exclusive'] as const)
        for (const enddate of ['inclusive', 'exclusive'] as const) {
          simulator.setOptions({ startdate, enddate });
          const expected = dayItems.filter((item) => {
            const time = Date.parse(item.dt);
            return (
              (startdate === 'inclusive' ? time >= from : time > from) &&
              (enddate === 'inclusive' ? time <= to : time < to)
            );
          });
          expect(await getArray(simulator, query(first.dt, last.dt)), `${startdate}/${enddate}`).toEqual(
            expected,
          );
        }
      expect(dayItems.length).toBeGreaterThan(200);
    });
  });

  it("'ignored' drops the time and reads the date as a day", async () => {
    await withSimulator({ ...LONG_RANGE, instants: 'ignored' }, async (simulator) => {
      const noon = Date.parse(`${DAY}T12:00:00.000Z`);
      const asDays = await getArray(simulator, `/v1/feedback?startdate=${DAY}&enddate=${DAY}&limit=4000`);
      expect(await getArray(simulator, query(at(noon), at(noon + 1000)))).toEqual(asDays);
      expect(asDays.length).toBeGreaterThan(100);
    });
  });

  it("'refused' (the default) answers 400, naming the bound", async () => {
    await withSimulator({ ...LONG_RANGE }, async (simulator) => {
      const answer = await get(simulator, query(`${DAY}T00:00:00.000Z`, DAY));
      expect(answer.status).toBe(400);
      expect(JSON.stringify(answer.body)).toContain('startdate');
    });
  });

  it('an instant of another shape, or of a day that does not exist, is refused however instants are read', async () => {
    await withSimulator({ instants: 'honoured' }, async (simulator) => {
      for (const bad of ['2024-03-02T12:00:00Z', '2024-03-02T12:00:00.000+01:00', '2024-02-30T12:00:00.000Z'])
        expect((await get(simulator, query(bad, '2024-03-03'))).status, bad).toBe(400);
    });
  });
});

describe('a request without a limit', () => {
  it('gets defaultLimit items when one is set (the real service documents 50), under the cap', async () => {
    await withSimulator({ ...LONG_RANGE, defaultLimit: 50 }, async (simulator) => {
      expect(await getArray(simulator, `/v1/feedback?startdate=${DAY}&enddate=${DAY}`)).toHaveLength(50);
      // A limit sent is served as before.
      expect(await getArray(simulator, `/v1/feedback?startdate=${DAY}&enddate=${DAY}&limit=60`)).toHaveLength(
        60,
      );
      simulator.setOptions({ cap: 20 });
      expect(await getArray(simulator, `/v1/feedback?startdate=${DAY}&enddate=${DAY}`)).toHaveLength(20);
    });
  });
});
