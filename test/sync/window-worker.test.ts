import { describe, expect, it } from 'vitest';
import type { SourceConfig } from '../../src/config/source-config.js';
import type { WindowJob } from '../../src/queue/window-queue.js';
import type { SourceReadings } from '../../src/sync/reading-store.js';
import {
  jobVerdict,
  laneDelayMs,
  MAX_LANE_BACKOFF_MS,
  RunStates,
  workerCanTakeJobs,
} from '../../src/sync/window-worker.js';

const shop = { name: 'shop', baseUrl: 'http://shop.test', apiKey: 'k' } as SourceConfig;
const job: WindowJob = {
  runId: 7,
  source: 'shop',
  resource: 'feedback',
  day: '2026-03-10',
  startDay: '2026-03-01',
  today: '2026-03-12',
  schema: '0010-known',
};

describe('what a worker does with a job before running it', () => {
  it('runs a job of a source it has a key for, planned by an insights-sync it knows', () => {
    expect(jobVerdict(job, new Map([['shop', shop]]), 'w1', '0010-known')).toEqual({ source: shop });
  });

  it('fails back a job from a newer planner, and stops taking jobs', () => {
    const verdict = jobVerdict(
      { ...job, schema: '0011-newer' },
      new Map([['shop', shop]]),
      'w1',
      '0010-known',
    );
    expect(verdict).toMatchObject({ refuse: true });
    expect('fail' in verdict && verdict.fail).toMatch(/upgrade insights-sync/);
  });

  it('fails back a job of a source it has no key for, and goes on taking others', () => {
    expect(jobVerdict({ ...job, source: 'blog' }, new Map([['shop', shop]]), 'w1', '0010-known')).toEqual({
      fail: 'worker w1 has no source named blog',
      refuse: false,
    });
  });
});

describe('what a worker knows of a run and source', () => {
  const readingsOf = (source: string) => ({ source }) as unknown as SourceReadings;

  it('is read once per run and source, and shared by the windows of both', async () => {
    const loads: string[] = [];
    const runs = new RunStates(async (runId, source) => {
      loads.push(`${runId}/${source}`);
      return readingsOf(source);
    });
    const first = await runs.of(1, 'shop');
    first.fatal = true;
    expect((await runs.of(1, 'shop')).fatal).toBe(true);
    expect((await runs.of(2, 'shop')).fatal).toBe(false);
    expect(loads).toEqual(['1/shop', '2/shop']);
  });

  it('forgets the oldest run once it knows of many', async () => {
    const loads: number[] = [];
    const runs = new RunStates(async (runId, source) => {
      loads.push(runId);
      return readingsOf(source);
    });
    for (let runId = 1; runId <= 65; runId += 1) await runs.of(runId, 'shop');
    await runs.of(65, 'shop');
    await runs.of(1, 'shop');
    expect(loads.filter((r) => r === 1)).toHaveLength(2);
    expect(loads.filter((r) => r === 65)).toHaveLength(1);
  });
});

describe('a lane that fails', () => {
  it('waits the poll interval while all is well, then twice as long for each failure in a row, up to 30 s', () => {
    expect(laneDelayMs(0, 200)).toBe(200);
    expect([1, 2, 3, 4].map((n) => laneDelayMs(n, 200))).toEqual([400, 800, 1600, 3200]);
    expect(laneDelayMs(8, 200)).toBe(MAX_LANE_BACKOFF_MS);
    expect(laneDelayMs(10_000, 200)).toBe(30_000);
  });

  it("stops the heartbeat: the worker looks alive only while every lane's last attempt worked", () => {
    expect(workerCanTakeJobs([{ failures: 0 }, { failures: 0 }])).toBe(true);
    expect(workerCanTakeJobs([{ failures: 0 }, { failures: 1 }])).toBe(false);
    expect(workerCanTakeJobs([{ failures: 3 }])).toBe(false);
  });
});
