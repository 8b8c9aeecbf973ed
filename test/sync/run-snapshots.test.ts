import { describe, expect, it } from 'vitest';
import { testsOutcome } from '../../src/sync/run-snapshots.js';

describe('the outcome of a test snapshot', () => {
  it('adds what the list and every detail read to what was loaded', () => {
    const totals = {
      inserted: 2,
      updated: 1,
      unchanged: 3,
      removed: 1,
      revived: 0,
      suspicious: 1,
      conflicts: 0,
    };
    const read = (fetched: number, rejected: number, reasked: number) => ({
      fetched,
      rejected: Array.from({ length: rejected }, () => ({
        item: {},
        error: 'rating: bad',
        problems: ['rating: bad'],
      })),
      reasked,
    });
    expect(
      testsOutcome({ source: 'shop', resource: 'abtesting' }, totals, read(4, 1, 1), [
        read(3, 0, 0),
        read(2, 1, 2),
      ]),
    ).toEqual({
      source: 'shop',
      resource: 'abtesting',
      status: 'done',
      ...totals,
      fetched: 9,
      rejected: 2,
      reasked: 3,
    });
  });
});
