import { describe, expect, it } from 'vitest';
import { LATEST_MIGRATION } from '../../src/db/migrator.js';
import type { PlannedWindow } from '../../src/queue/contract.js';
import type { SourceHandle } from '../../src/sync/context.js';
import { jobsToCancel, windowJobs } from '../../src/sync/queue-dispatch.js';

const handle = (name: string) => ({ name }) as SourceHandle;

describe('the jobs of a queued run', () => {
  it('are one per planned window, in the plan order, stamped with the planner migration', () => {
    const plans: PlannedWindow<SourceHandle>[] = [
      { handle: handle('shop'), resource: 'feedback', day: '2026-03-10', startDay: '2026-03-01' },
      { handle: handle('blog'), resource: 'survey', day: '2026-03-11', startDay: '2026-03-02' },
    ];
    expect(windowJobs(plans, { runId: 7, today: '2026-03-12' })).toEqual([
      {
        runId: 7,
        source: 'shop',
        resource: 'feedback',
        day: '2026-03-10',
        startDay: '2026-03-01',
        today: '2026-03-12',
        schema: LATEST_MIGRATION,
      },
      {
        runId: 7,
        source: 'blog',
        resource: 'survey',
        day: '2026-03-11',
        startDay: '2026-03-02',
        today: '2026-03-12',
        schema: LATEST_MIGRATION,
      },
    ]);
  });

  it("carry the ledger's hints of a day: settled empty before, the items stored of it before", () => {
    const plans: PlannedWindow<SourceHandle>[] = [
      {
        handle: handle('shop'),
        resource: 'feedback',
        day: '2026-03-10',
        startDay: '2026-03-01',
        itemsBefore: 1500,
      },
      {
        handle: handle('shop'),
        resource: 'feedback',
        day: '2026-03-11',
        startDay: '2026-03-01',
        emptyBefore: true,
        itemsBefore: 0,
      },
    ];
    const [busy, empty] = windowJobs(plans, { runId: 7, today: '2026-03-12' });
    expect(busy).toMatchObject({ day: '2026-03-10', itemsBefore: 1500 });
    expect(busy).not.toHaveProperty('emptyBefore');
    expect(empty).toMatchObject({ day: '2026-03-11', emptyBefore: true });
    expect(empty).not.toHaveProperty('itemsBefore');
  });

  it('no longer worth running are cancelled by source, each once', () => {
    const jobs = windowJobs(
      [
        { handle: handle('shop'), resource: 'feedback', day: '2026-03-10', startDay: '2026-03-01' },
        { handle: handle('shop'), resource: 'feedback', day: '2026-03-11', startDay: '2026-03-01' },
        { handle: handle('shop'), resource: 'survey', day: '2026-03-10', startDay: '2026-03-01' },
        { handle: handle('blog'), resource: 'feedback', day: '2026-03-10', startDay: '2026-03-01' },
      ],
      { runId: 7, today: '2026-03-12' },
    );
    const pending = new Map([
      ['a', 0],
      ['b', 1],
      ['c', 2],
      ['d', 3],
    ]);
    const cancelled = new Set<string>();
    const refusedFeedbackOfShop = (source: string, resource: string) =>
      source === 'shop' && resource === 'feedback';
    expect(jobsToCancel(pending, jobs, cancelled, refusedFeedbackOfShop)).toEqual(
      new Map([['shop', ['a', 'b']]]),
    );
    expect(jobsToCancel(pending, jobs, cancelled, refusedFeedbackOfShop)).toEqual(new Map());
    expect(jobsToCancel(pending, jobs, cancelled, () => true)).toEqual(
      new Map([
        ['shop', ['c']],
        ['blog', ['d']],
      ]),
    );
  });
});
