/**
 * The sample-ratio-mismatch check means something: the API says nothing of a test's intended
 * split, so without a declared one there is no check and no alarm ('allocation unknown'); a split
 * declared in the config (a source's default, or per test) turns it on. verdict joins the
 * Holm-adjusted p-value, the lift's sign and the check.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExpectedAllocation } from '../../src/config/source-config.js';
import { allocationRows } from '../../src/load/expected-allocations.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst, simulatorSource } from '../helpers/sync-harness.js';

const FROM = '2026-03-01';
const TO = '2026-03-05';
const NOW = new Date('2026-03-06T04:00:00.000Z');

describe('the sample-ratio-mismatch check and the verdict of ab_test_results', () => {
  let t: TestDatabase;
  let sim: Simulator;
  let skewed: string;
  let even: string;

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 3, from: FROM, to: TO, cap: 4000 });
    const [first, second] = sim.truth().abTests;
    if (first === undefined || second === undefined)
      throw new Error('the simulator has fewer than 2 A/B tests');
    skewed = first.id;
    even = second.id;
    // Allocated 70/30 by its owner; the second converts better (15% against 10%).
    sim.setTestResults('abtesting', skewed, [
      { variant: 'control', complete: 700, total: 7000 },
      { variant: 'variant 1', complete: 450, total: 3000 },
    ]);
    // Split evenly, and as uneven as chance makes it: chi-square 100^2/5000 * 2 = 4.
    sim.setTestResults('abtesting', even, [
      { variant: 'control', complete: 500, total: 5100 },
      { variant: 'variant 1', complete: 490, total: 4900 },
    ]);
  });
  afterAll(async () => {
    await sim?.stop();
    await t?.drop();
  });

  const sync = (expectedAllocation?: ExpectedAllocation) =>
    runAgainst(t, sim, {
      now: NOW,
      sources: [
        { ...simulatorSource(sim), ...(expectedAllocation === undefined ? {} : { expectedAllocation }) },
      ],
    });
  const results = () =>
    t.db
      .selectFrom('ab_test_results')
      .select([
        'test_id',
        'variant',
        'is_control',
        'srm_chi_square',
        'srm_p_value',
        'sample_ratio_mismatch',
        'srm_status',
        'expected_share',
        'verdict',
        'p_value_holm',
        'absolute_lift',
        'removed_at',
      ])
      .orderBy('test_id')
      .orderBy('variant')
      .execute();

  it('without a declared split: no alarm on any test, each says its allocation is unknown', async () => {
    await sync();
    const rows = (await results()).filter((r) => r.removed_at === null);
    expect(rows.length).toBeGreaterThan(4);
    expect(rows.filter((r) => r.sample_ratio_mismatch !== null)).toEqual([]);
    expect(rows.filter((r) => r.srm_p_value !== null || r.srm_chi_square !== null)).toEqual([]);
    expect(new Set(rows.map((r) => r.srm_status))).toEqual(new Set(['allocation unknown']));
    expect(rows.filter((r) => r.verdict === 'untrustworthy')).toEqual([]);
  });

  it('a declared 50/50 default: the test allocated 70/30 alarms, with the textbook chi-square', async () => {
    await sync({ default: 'equal' });
    const rows = await results();
    const test = rows.filter((r) => r.test_id === skewed);
    // (7000 - 5000)^2 / 5000 + (3000 - 5000)^2 / 5000 = 1600, one degree of freedom.
    for (const row of test) {
      expect(row.srm_chi_square).toBeCloseTo(1600, 9);
      expect(row).toMatchObject({
        srm_status: 'mismatch',
        sample_ratio_mismatch: true,
        expected_share: 0.5,
        verdict: 'untrustworthy',
      });
      expect(row.srm_p_value).toBeLessThan(1e-300);
    }
    // The evenly split test: chi-square 4, p = P(chi2(1) >= 4) = 0.0455003 (tables): no alarm.
    for (const row of rows.filter((r) => r.test_id === even)) {
      expect(row.srm_chi_square).toBeCloseTo(4, 9);
      expect(row.srm_p_value).toBeCloseTo(0.0455003, 6);
      expect(row).toMatchObject({ srm_status: 'ok', sample_ratio_mismatch: false });
      expect(row.verdict).toBe(row.is_control ? null : 'inconclusive');
    }
  });

  it('the test declared 70/30 passes the check, and its better variant is the winner', async () => {
    await sync({ default: 'equal', tests: { [skewed]: { control: 70, 'variant 1': 30 } } });
    const rows = (await results()).filter((r) => r.test_id === skewed);
    expect(rows.map((r) => [r.variant, r.expected_share, r.srm_chi_square, r.srm_status])).toEqual([
      ['control', 0.7, 0, 'ok'],
      ['variant 1', 0.3, 0, 'ok'],
    ]);
    const variant = rows.find((r) => r.variant === 'variant 1');
    expect(variant?.p_value_holm).toBeLessThan(0.05);
    expect(variant?.absolute_lift).toBeGreaterThan(0);
    expect(variant?.verdict).toBe('winner');
    expect(rows.find((r) => r.is_control)?.verdict).toBeNull();
  });

  it('a split taken out of the config stops the check', async () => {
    await sync();
    expect(await t.db.selectFrom('expected_allocations').selectAll().execute()).toEqual([]);
    const rows = (await results()).filter((r) => r.removed_at === null);
    expect(new Set(rows.map((r) => r.srm_status))).toEqual(new Set(['allocation unknown']));
  });
});

describe('allocationRows: the config declarations as rows', () => {
  it("'equal' is one '*' variant; weights are one row per variant; the default is test '*'", () => {
    expect(allocationRows({ default: 'equal', tests: { t9: { control: 2, B: 1 } } })).toEqual([
      { test_id: '*', variant: '*', weight: 1 },
      { test_id: 't9', variant: 'B', weight: 1 },
      { test_id: 't9', variant: 'control', weight: 2 },
    ]);
    expect(allocationRows(undefined)).toEqual([]);
  });
});
