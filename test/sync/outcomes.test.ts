import { describe, expect, it } from 'vitest';
import { summarize, unaccountedItems, withSetAside } from '../../src/sync/outcomes.js';
import { snapshotOutcome, windowOutcome } from '../helpers/outcomes.js';

describe('summarize', () => {
  it('sums the evidence counts: missingUpstream once a window reports it, reasked on every snapshot', () => {
    const summary = summarize(
      [
        windowOutcome({ day: '2026-03-09', missingUpstream: 1, moves: 2 }),
        windowOutcome({ day: '2026-03-10', missingUpstream: 2 }),
        windowOutcome({ resource: 'survey' }),
      ],
      [snapshotOutcome({ reasked: 3 }), snapshotOutcome({}), snapshotOutcome({ resource: 'abtesting' })],
    );
    expect(summary.shop?.feedback).toMatchObject({
      missingUpstream: 3,
      moves: 2,
      setAside: 0,
      neighbours: 0,
    });
    expect(summary.shop?.feedback?.reasked).toBeUndefined();
    expect(summary.shop?.survey).not.toHaveProperty('missingUpstream');
    expect(summary.shop?.survey).not.toHaveProperty('moves');
    expect(summary.shop?.survey).toMatchObject({ setAside: 0, duplicates: 0, neighboursAdded: 0 });
    expect(summary.shop?.heatmaps).toMatchObject({ reasked: 3, revived: 0, suspicious: 0 });
    expect(summary.shop?.heatmaps).not.toHaveProperty('setAside');
    expect(summary.shop?.abtesting?.reasked).toBe(0);
  });

  it('adds up the windows per source and resource', () => {
    const summary = summarize(
      [
        windowOutcome({
          day: '2026-03-09',
          fetched: 13,
          inserted: 6,
          updated: 1,
          unchanged: 3,
          rejected: 2,
          duplicates: 1,
          conflicts: 1,
          neighbours: 4,
          neighboursAdded: 1,
        }),
        windowOutcome({ day: '2026-03-10', fetched: 5, inserted: 5 }),
        windowOutcome({ resource: 'survey', fetched: 7, unchanged: 7 }),
        windowOutcome({ source: 'blog', fetched: 1, inserted: 1 }),
      ],
      [],
    );
    expect(Object.keys(summary).sort()).toEqual(['blog', 'shop']);
    expect(Object.keys(summary.shop ?? {}).sort()).toEqual(['feedback', 'survey']);
    expect(summary.shop?.feedback).toEqual({
      windows: 2,
      failedWindows: 0,
      skippedWindows: 0,
      truncatedDays: [],
      fetched: 18,
      inserted: 11,
      updated: 1,
      unchanged: 3,
      rejected: 2,
      removed: 0,
      conflicts: 1,
      collisions: 0,
      errors: [],
      setAside: 0,
      duplicates: 1,
      suppressed: 0,
      discarded: 0,
      neighbours: 4,
      neighboursAdded: 1,
    });
    // Every item fetched is accounted for; the neighbours are not among them.
    const feedback = summary.shop?.feedback;
    expect(feedback && unaccountedItems(feedback)).toBe(0);
    expect(unaccountedItems({ fetched: 5, inserted: 1, updated: 1, unchanged: 1, rejected: 1 })).toBe(1);
    expect(summary.shop?.survey).toMatchObject({ windows: 1, fetched: 7, unchanged: 7 });
    expect(summary.blog?.feedback).toMatchObject({ windows: 1, fetched: 1, inserted: 1 });
  });

  it('adds up the cross-day key collisions set aside per source and resource', () => {
    const summary = summarize(
      [
        windowOutcome({ day: '2026-03-10', collisions: 2 }),
        windowOutcome({ day: '2026-03-11', collisions: 3 }),
        windowOutcome({}),
      ],
      [],
    );
    expect(summary.shop?.feedback?.collisions).toBe(5);
  });

  it('lists truncated days in ascending order', () => {
    const summary = summarize(
      [
        windowOutcome({ day: '2026-03-10', truncated: true }),
        windowOutcome({ day: '2026-02-28', truncated: true }),
        windowOutcome({ day: '2026-03-01', truncated: false }),
        windowOutcome({ day: '2026-03-02', truncated: true }),
      ],
      [],
    );
    expect(summary.shop?.feedback?.truncatedDays).toEqual(['2026-02-28', '2026-03-02', '2026-03-10']);
  });

  it('counts failed and skipped windows', () => {
    const summary = summarize(
      [
        windowOutcome({ status: 'failed', error: 'HTTP 500' }),
        windowOutcome({ status: 'failed', error: 'HTTP 502' }),
        windowOutcome({ status: 'skipped' }),
        windowOutcome({ status: 'open' }),
        windowOutcome({ status: 'done' }),
      ],
      [],
    );
    expect(summary.shop?.feedback).toMatchObject({ windows: 5, failedWindows: 2, skippedWindows: 1 });
  });

  it('adds snapshots to their resource, with removals, and counts a failed one', () => {
    const summary = summarize(
      [],
      [
        snapshotOutcome({ fetched: 4, inserted: 1, unchanged: 2, removed: 1 }),
        snapshotOutcome({ resource: 'abtesting', status: 'failed', error: 'timeout' }),
      ],
    );
    expect(summary.shop?.heatmaps).toMatchObject({
      windows: 0,
      fetched: 4,
      inserted: 1,
      unchanged: 2,
      removed: 1,
    });
    expect(summary.shop?.abtesting).toMatchObject({ failedWindows: 1, errors: ['timeout'] });
  });

  it('keeps each error once, and at most five', () => {
    const errors = ['e1', 'e2', 'e1', 'e3', 'e2', 'e4', 'e5', 'e6', 'e7'];
    const summary = summarize(
      errors.map((error, i) =>
        windowOutcome({ day: `2026-03-${String(i + 1).padStart(2, '0')}`, status: 'failed', error }),
      ),
      [],
    );
    expect(summary.shop?.feedback?.errors).toEqual(['e1', 'e2', 'e3', 'e4', 'e5']);
    expect(summary.shop?.feedback?.failedWindows).toBe(9);
  });

  it('is empty without outcomes', () => {
    expect(summarize([], [])).toEqual({});
  });
});

describe('withSetAside', () => {
  it('counts collisions and moves from what the run left in key_collisions, not from each window', () => {
    // One window set a version aside as a collision; a concurrent one found the item had moved,
    // took the version back into the table and left the old one aside as a move.
    const summary = summarize(
      [
        windowOutcome({ day: '2026-03-02', collisions: 1, moves: 0 }),
        windowOutcome({ day: '2026-03-04', collisions: 0, moves: 1 }),
        windowOutcome({ resource: 'recordings', collisions: 2, moves: 0 }),
      ],
      [snapshotOutcome({})],
    );
    const counted = withSetAside(summary, [
      { source: 'shop', resource: 'feedback', reason: 'moved', count: 1 },
      { source: 'shop', resource: 'recordings', reason: 'collision', count: 2 },
    ]);
    expect(counted.shop?.feedback).toMatchObject({ collisions: 0, moves: 1 });
    expect(counted.shop?.recordings).toMatchObject({ collisions: 2, moves: 0 });
    expect(counted.shop?.heatmaps?.moves).toBeUndefined();
  });
});
