import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  binomialTail,
  judgeInvalid,
  MIN_ITEMS_FOR_PATTERN,
  MIN_ITEMS_FOR_SHARE,
  SIGNIFICANCE,
} from '../../src/extract/invalid-policy.js';
import { validateItems } from '../../src/extract/validate.js';
import { feedbackSchema } from '../../src/schemas/feedback.js';
import type { Rejected } from '../../src/schemas/rejected.js';
import { feedback } from '../helpers/api-items.js';

/** `count` rejects spread over `kinds` different problems (round robin). */
function rejects(count: number, kinds = 4): Rejected[] {
  return Array.from({ length: count }, (_, i) => ({
    item: { i },
    error: `field${i % kinds}: Invalid input`,
    problems: [`field${i % kinds}: Invalid input`],
  }));
}

/** P(X >= k) for X ~ Binomial(n, p), summed term by term (fine for small n). */
function exactTail(n: number, k: number, p: number): number {
  let sum = 0;
  for (let j = k; j <= n; j++) {
    let choose = 1;
    for (let i = 0; i < j; i++) choose = (choose * (n - i)) / (i + 1);
    sum += choose * p ** j * (1 - p) ** (n - j);
  }
  return sum;
}

describe('judgeInvalid: a day fails only on evidence that its response is broken', () => {
  const share = 0.05;

  it('never fails a small day on its share: 1 of 1, 1 of 4, 4 of 4, 3 of 19', () => {
    for (const [total, bad] of [
      [1, 1],
      [4, 1],
      [4, 4],
      [19, 3],
    ] as const)
      expect(
        judgeInvalid({ total, rejected: rejects(bad), maxInvalidShare: share }),
        `${bad}/${total}`,
      ).toEqual({
        fail: false,
      });
  });

  it('fails a day of 20 or more once the share is significant (default 0.05: 6 of 20, not 5)', () => {
    expect(judgeInvalid({ total: 20, rejected: rejects(5), maxInvalidShare: share }).fail).toBe(false);
    const judged = judgeInvalid({ total: 20, rejected: rejects(6), maxInvalidShare: share });
    expect(judged).toMatchObject({ fail: true, rule: 'significant-share' });
    expect(judged.fail && judged.reason).toMatch(
      /^6 of 20 items invalid \(30%, above the 5\.0% allowed by INSIGHTS_MAX_INVALID_SHARE by more than chance explains: one-sided binomial test p = 0\.00033 < 0\.001\); most common problem \(2\): field0: Invalid input$/,
    );
  });

  it.each([
    [40, 7, 8],
    [100, 13, 14],
    [1000, 73, 74],
  ])('at 0.05, %i items: %i invalid load, %i fail', (total, passes, fails) => {
    expect(judgeInvalid({ total, rejected: rejects(passes), maxInvalidShare: share }).fail).toBe(false);
    expect(judgeInvalid({ total, rejected: rejects(fails), maxInvalidShare: share }).fail).toBe(true);
  });

  it('loads the malformed shares of the drift trial (0.5% and 2%) on a large day', () => {
    expect(judgeInvalid({ total: 1000, rejected: rejects(20), maxInvalidShare: share }).fail).toBe(false);
  });

  it('fails on one same problem on 90% of at least 5 items: a changed response shape', () => {
    const same = (n: number): Rejected[] =>
      Array.from({ length: n }, (_, i) => ({
        item: { i },
        error: `dt: Invalid input: expected string, received undefined${i === 0 ? '; rating: Invalid input' : ''}`,
        problems: [
          'dt: Invalid input: expected string, received undefined',
          ...(i === 0 ? ['rating: x'] : []),
        ],
      }));
    const judged = judgeInvalid({ total: 10, rejected: same(9), maxInvalidShare: share });
    expect(judged).toMatchObject({ fail: true, rule: 'same-problem' });
    expect(judged.fail && judged.reason).toBe(
      '9 of 10 items invalid (90%), 9 of them with the same problem, which reads as a changed response shape: dt: Invalid input: expected string, received undefined',
    );
    expect(judgeInvalid({ total: 10, rejected: same(8), maxInvalidShare: share }).fail).toBe(false);
    expect(judgeInvalid({ total: 4, rejected: same(4), maxInvalidShare: share }).fail).toBe(false);
  });

  it('fails a day of 5 or more with not one valid item, whatever the problems', () => {
    expect(judgeInvalid({ total: 5, rejected: rejects(5, 5), maxInvalidShare: share })).toMatchObject({
      fail: true,
      rule: 'all-invalid',
    });
    expect(judgeInvalid({ total: 5, rejected: rejects(4, 4), maxInvalidShare: share }).fail).toBe(false);
  });

  it('groups rejects made without problems by their error', () => {
    const bare = Array.from({ length: 5 }, () => ({ item: {}, error: 'id: Invalid input' }));
    expect(judgeInvalid({ total: 5, rejected: bare, maxInvalidShare: share })).toMatchObject({
      rule: 'same-problem',
    });
  });

  it('groups rejects of validateItems by problem, values aside', () => {
    const items = [2147483648 * 2 ** 23, 2 ** 60, 2 ** 61, 2 ** 62, 2 ** 63].map((rating) => ({
      ...feedback(),
      rating,
    }));
    const { rejected } = validateItems(feedbackSchema, items);
    expect(new Set(rejected.map((r) => r.error)).size).toBe(5);
    expect(judgeInvalid({ total: 5, rejected, maxInvalidShare: share })).toMatchObject({
      rule: 'same-problem',
    });
  });

  it('never fails with INSIGHTS_MAX_INVALID_SHARE=1, even a day of nothing but the same problem', () => {
    const all = Array.from({ length: 50 }, () => ({ item: {}, error: 'dt: x', problems: ['dt: x'] }));
    expect(judgeInvalid({ total: 50, rejected: all, maxInvalidShare: 1 })).toEqual({ fail: false });
  });

  it('with INSIGHTS_MAX_INVALID_SHARE=0 fails a day of 20 for one invalid item, not a day of 19', () => {
    expect(judgeInvalid({ total: 20, rejected: rejects(1), maxInvalidShare: 0 }).fail).toBe(true);
    expect(judgeInvalid({ total: 19, rejected: rejects(1), maxInvalidShare: 0 }).fail).toBe(false);
  });

  it('needs the share above the setting for every rule', () => {
    // 9 of 10 with one problem, but a setting of 0.95 tolerates 90%.
    const same = Array.from({ length: 9 }, () => ({ item: {}, error: 'dt: x', problems: ['dt: x'] }));
    expect(judgeInvalid({ total: 10, rejected: same, maxInvalidShare: 0.95 }).fail).toBe(false);
  });

  it('never fails a day with no invalid item, and takes a total below the rejects as the rejects', () => {
    expect(judgeInvalid({ total: 0, rejected: [], maxInvalidShare: 0 })).toEqual({ fail: false });
    expect(judgeInvalid({ total: 0, rejected: rejects(6, 6), maxInvalidShare: share })).toMatchObject({
      rule: 'all-invalid',
    });
  });

  it('is monotone: more invalid items of the same day never turn a failure into a pass', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 400 }),
        fc.integer({ min: 0, max: 400 }),
        fc.constantFrom(0, 0.01, 0.05, 0.2, 0.5),
        (total, bad, maxInvalidShare) => {
          const k = Math.min(bad, total);
          const before = judgeInvalid({ total, rejected: rejects(k), maxInvalidShare }).fail;
          const after = judgeInvalid({
            total,
            rejected: rejects(Math.min(k + 1, total)),
            maxInvalidShare,
          }).fail;
          return !before || after;
        },
      ),
    );
  });

  it('keeps its documented numbers', () => {
    expect([MIN_ITEMS_FOR_SHARE, MIN_ITEMS_FOR_PATTERN, SIGNIFICANCE]).toEqual([20, 5, 0.001]);
  });
});

describe('binomialTail', () => {
  it('equals the term-by-term sum for small n', () => {
    for (const [n, k, p] of [
      [20, 5, 0.05],
      [20, 6, 0.05],
      [50, 10, 0.1],
      [100, 13, 0.05],
      [60, 59, 0.5],
      [300, 40, 0.1],
    ] as const) {
      const exact = exactTail(n, k, p);
      expect(Math.abs(binomialTail(n, k, p) - exact) / exact, `${n} ${k} ${p}`).toBeLessThan(1e-9);
    }
  });

  it('handles the edges', () => {
    expect(binomialTail(10, 0, 0.3)).toBe(1);
    expect(binomialTail(10, 11, 0.3)).toBe(0);
    expect(binomialTail(10, 1, 0)).toBe(0);
    expect(binomialTail(10, 10, 1)).toBe(1);
    expect(binomialTail(10, 10, 0.5)).toBeCloseTo(1 / 1024, 15);
  });

  it('is finite for a day of ten million items', () => {
    const p = binomialTail(10_000_000, 503_000, 0.05);
    expect(p).toBeGreaterThan(0);
    expect(p).toBeLessThan(1e-4);
  });
});
