import { describe, expect, it } from 'vitest';
import type { SourceConfig } from '../../src/config/source-config.js';
import type { WindowJob } from '../../src/queue/window-queue.js';
import type { SourceReadings } from '../../src/sync/reading-store.js';
import { jobVerdict, RunStates } from '../../src/sync/window-worker.js';

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
