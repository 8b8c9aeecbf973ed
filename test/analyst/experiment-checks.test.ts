import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as experimentChecks from '../../migrations/0012-experiment-checks.js';
import * as expectedAllocations from '../../migrations/0024-expected-allocations.js';
import * as analystHonesty from '../../migrations/0037-analyst-honesty.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

/**
 * The sample-ratio-mismatch check and Holm's adjustment of ab_test_results and
 * personalization_results (migration 0012; against a declared split since 0024), against textbook
 * values and hand computations. The source declares an equal split for every test, so each is
 * checked as 0012 checked them all.
 */

const declareEqualSplit = (t: TestDatabase) =>
  sql`insert into expected_allocations (source_id, test_id, variant, weight) values ('main', '*', '*', 1)`.execute(
    t.db,
  );

/** Relative tolerance of p-values: odd degrees of freedom go through erfc, good to 1.2e-7. */
const P_TOLERANCE = 2e-7;
function expectRelative(
  actual: number | null | undefined,
  wanted: number,
  label: string,
  tolerance = P_TOLERANCE,
) {
  expect(actual, label).not.toBeNull();
  expect(Math.abs((actual as number) - wanted), `${label}: ${actual} vs ${wanted}`).toBeLessThanOrEqual(
    Math.abs(wanted) * tolerance,
  );
}

describe('sample-ratio mismatch and Holm-adjusted p-values', () => {
  let t: TestDatabase;

  beforeAll(async () => {
    t = await createTestDatabase();
    await sql`insert into sources (source_id, base_url) values ('main', 'http://api.test')`.execute(t.db);
    for (const [table, id] of [
      ['ab_tests', 'skewed'],
      ['ab_tests', 'balanced'],
      ['ab_tests', 'three-way'],
      ['ab_tests', 'holm'],
      ['ab_tests', 'alone'],
      ['personalization_tests', 'wp-skewed'],
    ] as const)
      await sql`insert into ${sql.table(table)} (source_id, id, test_name, url, goal_profile_id, created_at, updated_at, raw)
                values ('main', ${id}, ${id}, 'https://shop.example.com/', 'gp-1', now(), now(), '{}')`.execute(
        t.db,
      );
    const results: [string, string, string, number, number][] = [
      // 10,000 against 9,000: chi-square 52.6, p about 4e-13.
      ['abtesting', 'skewed', 'control', 1000, 10000],
      ['abtesting', 'skewed', 'variant 1', 950, 9000],
      // 10,000 against 10,050: chi-square 0.125, p about 0.72.
      ['abtesting', 'balanced', 'control', 1000, 10000],
      ['abtesting', 'balanced', 'variant 1', 1010, 10050],
      // 1,000 / 1,100 / 900: expected 1,000 each, chi-square (0 + 100² + 100²) / 1000 = 20 on 2 df.
      ['abtesting', 'three-way', 'control', 100, 1000],
      ['abtesting', 'three-way', 'variant 1', 110, 1100],
      ['abtesting', 'three-way', 'variant 2', 90, 900],
      // A control and 3 variants with equal totals: no mismatch, three comparisons to adjust.
      ['abtesting', 'holm', 'control', 100, 1000],
      ['abtesting', 'holm', 'variant 1', 140, 1000],
      ['abtesting', 'holm', 'variant 2', 125, 1000],
      ['abtesting', 'holm', 'variant 3', 126, 1000],
      // A variant removed at the service: out of both checks.
      ['abtesting', 'holm', 'variant 4', 500, 5000],
      ['abtesting', 'alone', 'control', 10, 100],
      ['personalization', 'wp-skewed', 'Control', 100, 5000],
      ['personalization', 'wp-skewed', 'variant 1', 100, 4000],
    ];
    for (const [kind, id, variant, complete, total] of results)
      await sql`insert into test_results (source_id, test_kind, test_id, variant, complete, total, raw)
                values ('main', ${kind}, ${id}, ${variant}, ${complete}, ${total}, '{}')`.execute(t.db);
    await sql`update test_results set removed_at = now() where test_id = 'holm' and variant = 'variant 4'`.execute(
      t.db,
    );
    await declareEqualSplit(t);
  });
  afterAll(() => t.drop());

  const rows = (testId: string, view: 'ab_test_results' | 'personalization_results' = 'ab_test_results') =>
    t.db.selectFrom(view).selectAll().where('test_id', '=', testId).orderBy('variant').execute();

  it('computes the chi-square upper tail at the textbook quantiles of df 1 to 5 and in closed form', async () => {
    // chi2.ppf(q, df) of the standard tables: the tail beyond each is exactly 1 - q.
    const quantiles: [number, number, number][] = [
      [3.841458820694124, 1, 0.05],
      [6.6348966010212145, 1, 0.01],
      [10.827566170662733, 1, 0.001],
      [5.991464547107979, 2, 0.05],
      [9.210340371976184, 2, 0.01],
      [13.815510557964274, 2, 0.001],
      [7.814727903251178, 3, 0.05],
      [11.344866730144373, 3, 0.01],
      [16.26623619623813, 3, 0.001],
      [9.487729036781154, 4, 0.05],
      [13.276704135987622, 4, 0.01],
      [18.46682695290317, 4, 0.001],
      [11.070497693516351, 5, 0.05],
      [15.08627246938899, 5, 0.01],
      [20.515005652432873, 5, 0.001],
      // Closed forms: df 2 is e^(-x/2); df 4 is e^(-x/2) (1 + x/2); df 1 at 1 is erfc(1/sqrt 2).
      [20, 2, Math.exp(-10)],
      [2, 4, 2 * Math.exp(-1)],
      [1, 1, 0.31731050786291415],
      [300, 2, Math.exp(-150)],
    ];
    const found = await sql<{ p: number }>`
      select chi_square_p_value(x, df) as p
        from unnest(${quantiles.map((q) => q[0])}::float8[], ${quantiles.map((q) => q[1])}::int[])
             with ordinality u(x, df, i) order by i`.execute(t.db);
    // The quantiles are given to about 15 digits; erfc adds its 1.2e-7.
    for (const [i, [x, df, p]] of quantiles.entries())
      expectRelative(found.rows[i]?.p, p, `chi2 tail(${x}, ${df})`, 1e-6);
    const edges = await sql<{ p: number | null }>`
      select chi_square_p_value(0, 3) as p union all select chi_square_p_value(2000, 2)
      union all select chi_square_p_value(2000, 7) union all select chi_square_p_value(1, 0)
      union all select chi_square_p_value(null, 2)`.execute(t.db);
    expect(edges.rows.map((r) => r.p)).toEqual([1, 0, 0, null, null]);
  });

  it('flags a skewed allocation (p < 0.001) and not a balanced one, on every row of the test', async () => {
    const skewed = await rows('skewed');
    // Expected 9,500 each: (500² + 500²) / 9500.
    for (const row of skewed) {
      expect(row.srm_chi_square).toBeCloseTo(500_000 / 9500, 9);
      expect(row.srm_p_value).toBeLessThan(0.001);
      expect(row.sample_ratio_mismatch).toBe(true);
    }
    const balanced = await rows('balanced');
    for (const row of balanced) {
      expect(row.srm_chi_square).toBeCloseTo((25 ** 2 * 2) / 10025, 12);
      expect(row.srm_p_value).toBeGreaterThan(0.5);
      expect(row.sample_ratio_mismatch).toBe(false);
    }
    const personalization = await rows('wp-skewed', 'personalization_results');
    expect(personalization.map((r) => r.sample_ratio_mismatch)).toEqual([true, true]);
  });

  it('uses variants - 1 degrees of freedom: 3 variants, chi-square 20, p = e^-10', async () => {
    for (const row of await rows('three-way')) {
      expect(row.srm_chi_square).toBeCloseTo(20, 9);
      expectRelative(row.srm_p_value, Math.exp(-10), 'three-way');
      expect(row.sample_ratio_mismatch).toBe(true);
    }
  });

  it('adjusts the p-values of 3 variants by Holm, as computed by hand', async () => {
    const holm = (await rows('holm')).filter((r) => r.removed_at === null);
    const p = Object.fromEntries(holm.map((r) => [r.variant, r.p_value as number]));
    const adjusted = Object.fromEntries(holm.map((r) => [r.variant, r.p_value_holm]));
    // Sorted ascending: variant 1 (14% vs 10%), variant 3 (12.6%), variant 2 (12.5%).
    const [p1, p3, p2] = [p['variant 1'] ?? 1, p['variant 3'] ?? 1, p['variant 2'] ?? 1];
    expect(p1).toBeLessThan(p3);
    expect(p3).toBeLessThan(p2);
    // Holm: the i-th smallest times (m - i + 1), then the running maximum, capped at 1.
    const first = Math.min(1, 3 * p1);
    const second = Math.max(first, Math.min(1, 2 * p3));
    const third = Math.max(second, Math.min(1, 1 * p2));
    expectRelative(adjusted['variant 1'], first, 'variant 1', 1e-12);
    expectRelative(adjusted['variant 3'], second, 'variant 3', 1e-12);
    expectRelative(adjusted['variant 2'], third, 'variant 2', 1e-12);
    // The step-down's maximum at work: 2 p3 is above p2, so variant 2 gets variant 3's value.
    expect(2 * p3).toBeGreaterThan(p2);
    expect(adjusted['variant 2']).toBe(adjusted['variant 3']);
    expect(adjusted.control).toBeNull();
    // Equal totals among the current variants; the removed variant 4 counts in neither check.
    expect(holm.map((r) => r.srm_chi_square)).toEqual([0, 0, 0, 0]);
    const removed = (await rows('holm')).find((r) => r.variant === 'variant 4');
    expect(removed).toMatchObject({ srm_chi_square: null, srm_p_value: null, p_value_holm: null });
    expect(removed?.p_value).not.toBeNull();
  });

  it('leaves one comparison unadjusted and a test of one variant unchecked', async () => {
    const balanced = (await rows('balanced')).find((r) => r.variant === 'variant 1');
    expect(balanced?.p_value_holm).toBe(balanced?.p_value);
    expect(await rows('alone')).toMatchObject([
      { srm_chi_square: null, srm_p_value: null, sample_ratio_mismatch: null },
    ]);
  });

  it('keeps every column the views had, in order, before the new ones, each with a comment', async () => {
    const columns = await sql<{ view: string; name: string; comment: string | null }>`
      select c.relname as view, a.attname as name, col_description(c.oid, a.attnum) as comment
        from pg_attribute a join pg_class c on c.oid = a.attrelid
       where c.relnamespace = current_schema()::regnamespace
         and c.relname in ('ab_test_results', 'personalization_results') and a.attnum > 0
       order by c.relname, a.attnum`.execute(t.db);
    for (const view of ['ab_test_results', 'personalization_results']) {
      const own = columns.rows.filter((c) => c.view === view);
      expect(own.map((c) => c.name)).toEqual([
        ...['source_id', 'test_id', 'test_name', 'url', 'goal_profile_id', 'variant', 'is_control'],
        ...['complete', 'total', 'conversion', 'conversion_ci_low', 'conversion_ci_high', 'control_variant'],
        ...['control_conversion', 'absolute_lift', 'relative_lift', 'lift_ci_low', 'lift_ci_high', 'z_score'],
        ...['p_value', 'last_seen_at', 'last_changed_at', 'removed_at'],
        ...['srm_chi_square', 'srm_p_value', 'sample_ratio_mismatch', 'p_value_holm'],
        ...['expected_share', 'srm_status', 'verdict'],
      ]);
      for (const c of own) expect(c.comment, `${view}.${c.name}`).toBeTruthy();
      expect(own.find((c) => c.name === 'srm_chi_square')?.comment).toMatch(
        /split declared in expected_allocations/,
      );
    }
  });

  it('down (0037, 0024, then 0012) takes the new columns away and keeps the others with their comments; up brings them back', async () => {
    const snapshot = () =>
      sql<{ name: string; comment: string | null }>`
        select a.attname as name, col_description(a.attrelid, a.attnum) as comment from pg_attribute a
         where a.attrelid = 'ab_test_results'::regclass and a.attnum > 0 order by a.attnum`.execute(t.db);
    const before = (await snapshot()).rows;
    const values = await sql`select * from ab_test_results order by test_id, variant`.execute(t.db);
    // As the migrator goes down: 0037 wraps the view that 0024 reads back.
    await t.db.transaction().execute((trx) => analystHonesty.down(trx));
    const before0037 = (await snapshot()).rows;
    expect(before0037.map((c) => c.name)).toEqual(before.map((c) => c.name));
    await t.db.transaction().execute((trx) => expectedAllocations.down(trx));
    expect((await snapshot()).rows.map((c) => c.name)).toEqual(before.slice(0, -3).map((c) => c.name));
    await t.db.transaction().execute((trx) => experimentChecks.down(trx));
    const down = (await snapshot()).rows;
    expect(down).toEqual(before0037.slice(0, -7));
    await t.db.transaction().execute((trx) => experimentChecks.up(trx));
    await t.db.transaction().execute((trx) => expectedAllocations.up(trx));
    await t.db.transaction().execute((trx) => analystHonesty.up(trx));
    await declareEqualSplit(t);
    expect((await snapshot()).rows).toEqual(before);
    expect((await sql`select * from ab_test_results order by test_id, variant`.execute(t.db)).rows).toEqual(
      values.rows,
    );
  });
});
