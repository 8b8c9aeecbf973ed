import { describe, expect, it } from 'vitest';
import { sendWindowJobs, type WindowJob, windowQueueName } from '../../src/queue/window-queue.js';
import { createTestDatabase } from '../helpers/database.js';
import { openMainQueue, TEST_QUEUE_SETTINGS } from '../helpers/queue-harness.js';

/** The order a worker's lane takes window jobs in, on pg-boss itself (the processes: queue-workers.trials.ts). */

describe('priorities', () => {
  it("a sync's windows go ahead of a backfill's already queued; a backfill's run newest day first", async () => {
    const t = await createTestDatabase();
    const settings = { ...TEST_QUEUE_SETTINGS, queueRetryLimit: 1 };
    const boss = await openMainQueue(t, { settings });
    try {
      const job = (runId: number, day: string): WindowJob => ({
        runId,
        source: 'main',
        resource: 'feedback',
        day,
        startDay: '2026-01-01',
        today: '2026-02-01',
      });
      await sendWindowJobs(
        boss,
        'backfill',
        ['2026-01-01', '2026-01-02', '2026-01-03'].map((d) => job(1, d)),
        settings,
      );
      await sendWindowJobs(
        boss,
        'sync',
        ['2026-01-30', '2026-01-31'].map((d) => job(2, d)),
        settings,
      );
      // One at a time, as a worker's lane takes them (a batch comes back in no particular order).
      const fetched: WindowJob[] = [];
      for (let i = 0; i < 5; i++) {
        const [next] = await boss.fetch<WindowJob>(windowQueueName('main'));
        if (next) fetched.push(next.data);
      }
      expect(fetched.map((j) => `${j.runId} ${j.day}`)).toEqual([
        '2 2026-01-30',
        '2 2026-01-31',
        '1 2026-01-03',
        '1 2026-01-02',
        '1 2026-01-01',
      ]);
    } finally {
      await boss.stop({ graceful: false, timeout: 1000 });
      await t.drop();
    }
  });
});
