import { describe, expect, it } from 'vitest';
import { getArray, keyOf, withSimulator } from './sim-helpers.js';

const onDay = (day: string) => `startdate=${day}&enddate=${day}`;

describe('moveItem: an item whose date the service corrects', () => {
  it.each([
    ['earlier', '2024-03-04', '2024-03-02'],
    ['later', '2024-03-02', '2024-03-04'],
  ])(
    'moves an item to an %s day: the old day no longer serves it, the new day does, key kept',
    async (_, from, to) => {
      await withSimulator({}, async (simulator) => {
        const before = await getArray(simulator, `/v1/recordings?${onDay(from)}`);
        const totalBefore = simulator.truth().recordings.length;
        const moved = simulator.moveItem('recordings', from, 0, to);

        expect(moved.key).toBe(keyOf(before[0] ?? {}));
        expect(moved.toDt.slice(0, 10)).toBe(to);
        expect(moved.toDt.slice(10)).toBe(moved.fromDt.slice(10));
        const oldDay = await getArray(simulator, `/v1/recordings?${onDay(from)}`);
        const newDay = await getArray(simulator, `/v1/recordings?${onDay(to)}`);
        expect(oldDay.map(keyOf)).not.toContain(moved.key);
        expect(oldDay).toHaveLength(before.length - 1);
        expect(newDay.find((r) => keyOf(r) === moved.key)?.dt).toBe(moved.toDt);
        // The truth holds it once, on its new day.
        const truth = simulator.truth().recordings.filter((r) => String(r.id) === moved.key);
        expect(truth.map((r) => r.dt)).toEqual([moved.toDt]);
        expect(simulator.truth().recordings).toHaveLength(totalBefore);
      });
    },
  );

  it('moves feedback and survey answers too, and back again', async () => {
    await withSimulator({}, async (simulator) => {
      const moved = simulator.moveItem('feedback', '2024-03-05', 1, '2024-03-01');
      const day1 = await getArray(simulator, `/v1/feedback?${onDay('2024-03-01')}`);
      const at = day1.findIndex((f) => keyOf(f) === moved.key);
      const back = simulator.moveItem('feedback', '2024-03-01', at, '2024-03-05');
      expect(back.key).toBe(moved.key);
      expect(back.toDt).toBe(moved.fromDt);
      const survey = simulator.moveItem('survey', '2024-03-01', 0, '2024-03-02');
      const day2 = await getArray(simulator, `/v1/survey?${onDay('2024-03-02')}`);
      expect(day2.map((a) => `${a.id}:${a.question_id}`)).toContain(survey.key);
    });
  });
});
