import { describe, expect, it } from 'vitest';
import { feedbackSchema } from '../../src/schemas/feedback.js';
import { get, getArray, keyOf, withSimulator } from './sim-helpers.js';

describe('advance() as a client sees it over HTTP', () => {
  it('serves late items for recent days a client already read', async () => {
    await withSimulator({}, async (simulator) => {
      const window = '/v1/feedback?startdate=2024-03-04&enddate=2024-03-05';
      const before = await getArray(simulator, window);
      const report = simulator.advance();
      const after = await getArray(simulator, window);
      const lateOnWindow = after.filter((item) => !before.some((old) => keyOf(old) === keyOf(item)));
      expect(lateOnWindow.length).toBeGreaterThan(0);
      expect(after.length).toBe(before.length + lateOnWindow.length);
      expect(lateOnWindow.length).toBeLessThanOrEqual(report.late.feedback);
      for (const item of after) expect(feedbackSchema.safeParse(item).success).toBe(true);
      expect(await getArray(simulator, '/v1/recordings')).toEqual(simulator.truth().recordings);
    });
  });

  it('serves edited feedback under the same key', async () => {
    await withSimulator({}, async (simulator) => {
      const before = await getArray(simulator, '/v1/feedback');
      const { edited } = simulator.advance();
      const after = await getArray(simulator, '/v1/feedback');
      for (const { id, feedback_id } of edited) {
        const key = `${id}:${feedback_id}`;
        const old = before.find((item) => keyOf(item) === key);
        const now = after.find((item) => keyOf(item) === key);
        expect(old).toBeDefined();
        expect(now?.comment).not.toBe(old?.comment);
        expect(now?.dt).toBe(old?.dt);
      }
    });
  });

  it('removes an A/B test from the list and answers 404 for its detail, until restored', async () => {
    await withSimulator({}, async (simulator) => {
      const { removedTests } = simulator.advance();
      const removed = removedTests[0];
      const list = await getArray(simulator, '/v1/abtesting');
      expect(list).toHaveLength(3);
      expect(list.map((test) => test.id)).not.toContain(removed);
      expect((await get(simulator, `/v1/abtesting/detail/${removed}`)).status).toBe(404);

      simulator.advance({ restoreRemoved: true });
      expect(await getArray(simulator, '/v1/abtesting')).toHaveLength(4);
      expect((await get(simulator, `/v1/abtesting/detail/${removed}`)).status).toBe(200);
    });
  });

  it('grows complete and total of test results', async () => {
    await withSimulator({}, async (simulator) => {
      const id = simulator.truth().personalizationTests[0]?.id;
      const before = await getArray(simulator, `/v1/personalization/detail/${id}`);
      simulator.advance();
      const after = await getArray(simulator, `/v1/personalization/detail/${id}`);
      expect(after.map((result) => result.variant)).toEqual(before.map((result) => result.variant));
      after.forEach((result, index) => {
        expect(Number(result.total)).toBeGreaterThan(Number(before[index]?.total));
        expect(Number(result.complete)).toBeGreaterThanOrEqual(Number(before[index]?.complete));
      });
    });
  });
});
