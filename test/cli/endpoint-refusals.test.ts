import { describe, expect, it } from 'vitest';
import { snapshotChanges } from '../../src/cli/print-run.js';
import {
  EndpointRefusals,
  everyEndpointForbidden,
  type SnapshotOutcome,
  summarize,
  unwrittenSnapshot,
} from '../../src/sync/outcomes.js';
import { windowOutcome } from '../helpers/outcomes.js';

const refusedSnapshot = (resource: SnapshotOutcome['resource'], status: number): SnapshotOutcome => ({
  ...unwrittenSnapshot('shop', resource, 'failed'),
  error: `GET /v1/${resource} refused with HTTP ${status}`,
  refused: status,
});

describe('EndpointRefusals', () => {
  it('says true once per source and resource', () => {
    const refusals = new EndpointRefusals();
    expect(refusals.has('shop', 'recordings')).toBe(false);
    expect(refusals.add('shop', 'recordings', 403)).toBe(true);
    expect(refusals.add('shop', 'recordings', 403)).toBe(false);
    expect(refusals.has('shop', 'recordings')).toBe(true);
    expect(refusals.has('shop', 'feedback')).toBe(false);
    expect(refusals.has('blog', 'recordings')).toBe(false);
  });
});

describe('everyEndpointForbidden', () => {
  it('is true when every resource asked was refused with 403 and none loaded', () => {
    const windows = [
      windowOutcome({ resource: 'feedback', status: 'failed', refused: 403 }),
      windowOutcome({ resource: 'feedback', status: 'skipped' }),
      windowOutcome({ resource: 'survey', status: 'failed', refused: 403 }),
    ];
    expect(everyEndpointForbidden('shop', windows, [refusedSnapshot('heatmaps', 403)])).toBe(true);
  });

  it('is false when one resource loaded, answered 404, or only one resource was asked', () => {
    const feedback = windowOutcome({ resource: 'feedback', status: 'failed', refused: 403 });
    expect(everyEndpointForbidden('shop', [feedback, windowOutcome({ resource: 'survey' })], [])).toBe(false);
    expect(everyEndpointForbidden('shop', [feedback], [refusedSnapshot('heatmaps', 404)])).toBe(false);
    expect(everyEndpointForbidden('shop', [feedback], [])).toBe(false);
    // Another source's outcomes do not count.
    expect(everyEndpointForbidden('blog', [feedback], [refusedSnapshot('heatmaps', 403)])).toBe(false);
  });
});

describe('snapshot counts in the summary and the printed line', () => {
  it('adds removed, revived and suspicious per snapshot resource; lists only what is non-zero', () => {
    const snapshot = (
      resource: SnapshotOutcome['resource'],
      counts: Partial<SnapshotOutcome>,
    ): SnapshotOutcome => ({
      ...unwrittenSnapshot('shop', resource, 'skipped'),
      status: 'done',
      ...counts,
    });
    const summary = summarize(
      [windowOutcome({})],
      [
        snapshot('heatmaps', { removed: 2, suspicious: 1 }),
        snapshot('abtesting', { revived: 3 }),
        snapshot('personalization', {}),
      ],
    );
    expect(summary.shop?.heatmaps).toMatchObject({ removed: 2, revived: 0, suspicious: 1 });
    expect(summary.shop?.abtesting).toMatchObject({ removed: 0, revived: 3, suspicious: 0 });
    expect(snapshotChanges(summary)).toEqual([
      'shop/heatmaps: 2 removed, 1 suspicious',
      'shop/abtesting: 3 revived',
    ]);
  });
});
