import type { Rejected } from '../schemas/rejected.js';

/**
 * When invalid items fail a whole day instead of being quarantined alone.
 *
 * Invalid items go to `rejects` and the rest of their day loads: that is the rule. A day fails
 * only when its response as a whole looks broken, since loading it would then store a fraction of
 * the day as if it were the day (and a failed day is fetched again by the next run, while the
 * watermark waits). Evidence that a response is broken, with n the items judged and k the invalid
 * ones; every rule also needs k/n above `maxInvalidShare` (INSIGHTS_MAX_INVALID_SHARE), so 1
 * turns day failures off:
 *
 * 1. A changed shape: one same problem (same field, same message, values aside) on at least 90%
 *    of the items, and at least 5 items. A renamed or retyped field breaks every item the same way.
 * 2. Nothing valid: every item invalid, and at least 5 items.
 * 3. A significant share: at least 20 items, and so many invalid that a service whose items are
 *    invalid at the rate maxInvalidShare would serve that many or more with a probability below
 *    0.001 (one-sided binomial test). With the default 0.05: 6 of 20, 8 of 40, 14 of 100, 74 of
 *    1000 and more fail; 5 of 20 (25%) does not. With 0, any invalid item fails a day of 20.
 *
 * Small days never fail on a share alone: with 1 item of 4 invalid, the response may well be
 * fine. Items without a readable `dt` are judged with whatever day the caller gives them to.
 */

/** Fewer items than this are no evidence of a share (rule 3). */
export const MIN_ITEMS_FOR_SHARE = 20;
/** The largest chance of a healthy response looking this bad that still fails the day (rule 3). */
export const SIGNIFICANCE = 0.001;
/** Share of all items with one same problem that reads as a changed shape (rule 1). */
const SAME_PROBLEM_SHARE = 0.9;
/** Rules 1 and 2 need at least this many items: 1 or 2 bad items say nothing of a response. */
export const MIN_ITEMS_FOR_PATTERN = 5;

export interface InvalidInput {
  /** Items judged: the day's items plus those that belong to no readable day. */
  total: number;
  /** The invalid ones among them. */
  rejected: readonly Rejected[];
  /** INSIGHTS_MAX_INVALID_SHARE, 0..1. */
  maxInvalidShare: number;
}

export type InvalidJudgement =
  | { fail: false }
  | { fail: true; rule: 'same-problem' | 'all-invalid' | 'significant-share'; reason: string };

export function judgeInvalid({ total, rejected, maxInvalidShare }: InvalidInput): InvalidJudgement {
  const k = rejected.length;
  const n = Math.max(total, k);
  if (k === 0 || k / n <= maxInvalidShare) return { fail: false };
  const common = mostCommonProblem(rejected);
  const share = `${k} of ${n} items invalid (${pct(k / n)})`;

  if (n >= MIN_ITEMS_FOR_PATTERN && common.count >= SAME_PROBLEM_SHARE * n)
    return {
      fail: true,
      rule: 'same-problem',
      reason: `${share}, ${common.count} of them with the same problem, which reads as a changed response shape: ${common.problem}`,
    };
  if (n >= MIN_ITEMS_FOR_PATTERN && k === n)
    return {
      fail: true,
      rule: 'all-invalid',
      reason: `${share}: not one valid item; most common problem (${common.count}): ${common.problem}`,
    };
  if (n >= MIN_ITEMS_FOR_SHARE) {
    const p = binomialTail(n, k, maxInvalidShare);
    if (p < SIGNIFICANCE)
      return {
        fail: true,
        rule: 'significant-share',
        reason: `${k} of ${n} items invalid (${pct(k / n)}, above the ${pct(maxInvalidShare)} allowed by INSIGHTS_MAX_INVALID_SHARE by more than chance explains: one-sided binomial test p = ${p.toPrecision(2)} < ${SIGNIFICANCE}); most common problem (${common.count}): ${common.problem}`,
      };
  }
  return { fail: false };
}

function mostCommonProblem(rejected: readonly Rejected[]): { problem: string; count: number } {
  const counts = new Map<string, number>();
  for (const reject of rejected)
    for (const problem of new Set(reject.problems ?? [reject.error]))
      counts.set(problem, (counts.get(problem) ?? 0) + 1);
  let best = { problem: '', count: 0 };
  for (const [problem, count] of counts) if (count > best.count) best = { problem, count };
  return best;
}

/**
 * P(X >= k) for X ~ Binomial(n, p), for k > n p (the upper tail, which is all rule 3 asks).
 * Summed from the term at k, whose logarithm comes from log-factorials, with the ratio of
 * consecutive terms; past the mean the terms fall, so the sum stops once they no longer count.
 * Accurate to about 1e-12 relative for any n a day can hold; 0 where the tail underflows.
 */
export function binomialTail(n: number, k: number, p: number): number {
  if (k <= 0) return 1;
  if (k > n) return 0;
  if (p <= 0) return 0;
  if (p >= 1) return 1;
  const logTerm =
    logFactorial(n) - logFactorial(k) - logFactorial(n - k) + k * Math.log(p) + (n - k) * Math.log1p(-p);
  const odds = p / (1 - p);
  let sum = 1;
  let term = 1;
  for (let j = k; j < n; j++) {
    term *= ((n - j) / (j + 1)) * odds;
    sum += term;
    if (term < sum * 1e-17) break;
  }
  return Math.min(1, Math.exp(logTerm + Math.log(sum)));
}

/** ln(m!): summed exactly below 256, Stirling's series (error below 1e-17) from there. */
function logFactorial(m: number): number {
  if (m < 256) {
    let sum = 0;
    for (let i = 2; i <= m; i++) sum += Math.log(i);
    return sum;
  }
  const inv = 1 / m;
  const inv2 = inv * inv;
  return (
    m * Math.log(m) - m + 0.5 * Math.log(2 * Math.PI * m) + inv * (1 / 12 - inv2 * (1 / 360 - inv2 / 1260))
  );
}

function pct(share: number): string {
  return `${(share * 100).toFixed(share < 0.1 ? 1 : 0)}%`;
}
