import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

/**
 * The statistics of ab_test_results and personalization_results, against values computed here
 * independently: the normal tail by numerical integration of the density (not by an erfc
 * approximation like the SQL one), and textbook quantiles.
 */

const Z95 = 1.959963984540054;

/** P(|Z| >= |z|) = 2 * integral from |z| to infinity of the standard normal density (Simpson). */
function twoSidedP(z: number): number {
  const a = Math.abs(z);
  const b = a + 12; // the density beyond a + 12 is below 1e-31 of its value at a
  const steps = 24_000;
  const h = (b - a) / steps;
  const density = (x: number) => Math.exp(-(x * x) / 2) / Math.sqrt(2 * Math.PI);
  let sum = density(a) + density(b);
  for (let i = 1; i < steps; i++) sum += density(a + i * h) * (i % 2 === 0 ? 2 : 4);
  return Math.min(1, (2 * sum * h) / 3);
}

interface Expected {
  conversion: number | null;
  conversion_ci_low: number | null;
  conversion_ci_high: number | null;
  absolute_lift: number | null;
  relative_lift: number | null;
  lift_ci_low: number | null;
  lift_ci_high: number | null;
  z_score: number | null;
  p_value: number | null;
}

/** The textbook formulas, spelled out: Wilson interval, Wald interval of the difference, pooled z-test. */
function expected(variant: [number, number], control: [number, number] | null): Expected {
  const [x2, n2] = variant;
  const p2 = x2 / n2;
  const wilson = (sign: number) =>
    (p2 + Z95 ** 2 / (2 * n2) + sign * Z95 * Math.sqrt((p2 * (1 - p2)) / n2 + Z95 ** 2 / (4 * n2 * n2))) /
    (1 + Z95 ** 2 / n2);
  const none = {
    absolute_lift: null,
    relative_lift: null,
    lift_ci_low: null,
    lift_ci_high: null,
    z_score: null,
    p_value: null,
  };
  const own = { conversion: p2, conversion_ci_low: wilson(-1), conversion_ci_high: wilson(1) };
  if (control === null) return { ...own, ...none };
  const [x1, n1] = control;
  const p1 = x1 / n1;
  const lift = p2 - p1;
  const seLift = Math.sqrt((p1 * (1 - p1)) / n1 + (p2 * (1 - p2)) / n2);
  const pooled = (x1 + x2) / (n1 + n2);
  const sePooled = Math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2));
  const z = sePooled > 0 ? lift / sePooled : 0;
  return {
    ...own,
    absolute_lift: lift,
    relative_lift: p1 > 0 ? lift / p1 : null,
    lift_ci_low: lift - Z95 * seLift,
    lift_ci_high: lift + Z95 * seLift,
    z_score: z,
    p_value: sePooled > 0 ? twoSidedP(z) : 1,
  };
}

/**
 * Equal within a relative tolerance: 1e-9 for the closed formulas (only rounding differs), 2e-7
 * for p-values (the SQL erfc is good to 1.2e-7 relative).
 */
const P_TOLERANCE = 2e-7;
function expectClose(actual: number | null, wanted: number | null, label: string, relative = 1e-9): void {
  if (wanted === null) {
    expect(actual, label).toBeNull();
    return;
  }
  expect(actual, label).not.toBeNull();
  // Proportions near 0 also get an absolute floor (the two sides round 0 differently); p-values,
  // which can be 1e-100 and must keep their digits, do not.
  const tolerance = Math.max(Math.abs(wanted) * relative, relative === P_TOLERANCE ? 1e-300 : 1e-15);
  expect(Math.abs((actual as number) - wanted), `${label}: ${actual} vs ${wanted}`).toBeLessThanOrEqual(
    tolerance,
  );
}

describe('test statistics in SQL', () => {
  let t: TestDatabase;

  beforeAll(async () => {
    t = await createTestDatabase();
    await sql`insert into sources (source_id, base_url) values ('main', 'http://api.test')`.execute(t.db);
    const test = (table: string, id: string, name: string) =>
      sql`insert into ${sql.table(table)} (source_id, id, test_name, url, goal_profile_id, created_at, updated_at, raw)
          values ('main', ${id}, ${name}, 'https://shop.example.com/', 'gp-1', now(), now(), '{}')`.execute(
        t.db,
      );
    await test('ab_tests', 'ab-1', 'Checkout button colour');
    await test('ab_tests', 'ab-2', 'No control');
    await test('ab_tests', 'ab-3', 'Nobody converts');
    await test('ab_tests', 'ab-4', 'Overwhelming');
    await test('personalization_tests', 'wp-1', 'Returning visitor greeting');
    const results: [string, string, string, number, number][] = [
      ['abtesting', 'ab-1', 'control', 200, 1000],
      ['abtesting', 'ab-1', 'variant 1', 250, 1000],
      ['abtesting', 'ab-1', 'variant 2', 190, 1000],
      ['abtesting', 'ab-1', 'variant 3', 0, 0],
      ['abtesting', 'ab-1', 'variant 4', 12, 10],
      ['abtesting', 'ab-2', 'A', 30, 300],
      ['abtesting', 'ab-2', 'B', 45, 300],
      ['abtesting', 'ab-3', 'control', 0, 500],
      ['abtesting', 'ab-3', 'variant 1', 0, 400],
      ['abtesting', 'ab-4', 'control', 10, 10000],
      ['abtesting', 'ab-4', 'variant 1', 500, 10000],
      ['personalization', 'wp-1', 'Control', 120, 800],
      ['personalization', 'wp-1', 'variant 1', 150, 820],
    ];
    for (const [kind, id, variant, complete, total] of results) {
      await sql`insert into test_results (source_id, test_kind, test_id, variant, complete, total, raw)
                values ('main', ${kind}, ${id}, ${variant}, ${complete}, ${total}, '{}')`.execute(t.db);
    }
  });
  afterAll(() => t.drop());

  const row = async (view: 'ab_test_results' | 'personalization_results', testId: string, variant: string) =>
    t.db
      .selectFrom(view)
      .selectAll()
      .where('test_id', '=', testId)
      .where('variant', '=', variant)
      .executeTakeFirstOrThrow();

  const check = async (
    view: 'ab_test_results' | 'personalization_results',
    testId: string,
    variant: string,
    wanted: Expected,
  ) => {
    const actual = await row(view, testId, variant);
    for (const [column, value] of Object.entries(wanted))
      expectClose(
        actual[column as keyof Expected],
        value,
        `${testId} ${variant} ${column}`,
        column === 'p_value' ? P_TOLERANCE : undefined,
      );
    return actual;
  };

  it('computes the two-sided normal p-value to 2e-7 relative, from the center to the far tail', async () => {
    // Textbook quantiles: z of 0.05, 0.01, 0.001; and the integral for the rest.
    const known: [number, number][] = [
      [0, 1],
      [1, 0.3173105078629141],
      [Z95, 0.05],
      [2.5758293035489004, 0.01],
      [3.2905267314918945, 0.001],
      [-2.5758293035489004, 0.01],
      ...[0.5, 1.5, 2.2, 4, 6, 8, 12, 20, 30].map((z): [number, number] => [z, twoSidedP(z)]),
    ];
    const rows = await sql<{ z: number; p: number }>`
      select z, two_sided_p_value(z) as p from unnest(${known.map(([z]) => z)}::float8[]) z`.execute(t.db);
    for (const [i, [z, p]] of known.entries())
      expectClose(rows.rows[i]?.p ?? null, p, `p(${z})`, P_TOLERANCE);
    const extreme = await sql<{ p: number | null }>`
      select two_sided_p_value(40) as p union all select two_sided_p_value(null)`.execute(t.db);
    expect(extreme.rows.map((r) => r.p)).toEqual([0, null]);
  });

  it('gives each variant its conversion, Wilson interval, lift with its interval, z and p-value against the control', async () => {
    await check('ab_test_results', 'ab-1', 'variant 1', expected([250, 1000], [200, 1000]));
    const worse = await check('ab_test_results', 'ab-1', 'variant 2', expected([190, 1000], [200, 1000]));
    expect(worse).toMatchObject({
      test_name: 'Checkout button colour',
      url: 'https://shop.example.com/',
      is_control: false,
      control_variant: 'control',
      control_conversion: 0.2,
    });
    // 20% vs 25% of 1000 each: the textbook two-proportion test gives z = -2.68, p = 0.0074.
    const better = await row('ab_test_results', 'ab-1', 'variant 1');
    expect(better.z_score).toBeCloseTo(2.6774, 4);
    expect(better.p_value).toBeCloseTo(0.00742, 5);
    expect(better.relative_lift).toBeCloseTo(0.25, 12);
  });

  it('leaves the statistics of the control row, a variant without visitors and impossible counts null', async () => {
    const control = await check('ab_test_results', 'ab-1', 'control', expected([200, 1000], null));
    expect(control.is_control).toBe(true);
    const empty = await row('ab_test_results', 'ab-1', 'variant 3');
    expect(empty).toMatchObject({
      conversion: null,
      conversion_ci_low: null,
      p_value: null,
      absolute_lift: null,
    });
    const impossible = await row('ab_test_results', 'ab-1', 'variant 4');
    // More completions than visitors: no proportion, like every other statistic of the row.
    expect(impossible).toMatchObject({
      conversion: null,
      conversion_ci_low: null,
      p_value: null,
      lift_ci_low: null,
    });
  });

  it('has conversions but no lift when a test has no control variant', async () => {
    await check('ab_test_results', 'ab-2', 'A', expected([30, 300], null));
    await check('ab_test_results', 'ab-2', 'B', expected([45, 300], null));
    expect((await row('ab_test_results', 'ab-2', 'B')).control_variant).toBeNull();
  });

  it('reports no difference, not a division by zero, when nobody converts in either variant', async () => {
    const zero = await check('ab_test_results', 'ab-3', 'variant 1', expected([0, 400], [0, 500]));
    expect(zero).toMatchObject({ absolute_lift: 0, relative_lift: null, z_score: 0, p_value: 1 });
  });

  it('keeps the digits of a tiny p-value', async () => {
    const strong = await check('ab_test_results', 'ab-4', 'variant 1', expected([500, 10000], [10, 10000]));
    expect(strong.p_value).toBeGreaterThan(0);
    expect(strong.p_value).toBeLessThan(1e-90);
  });

  it('finds the control whatever its case, in personalization results too', async () => {
    await check('personalization_results', 'wp-1', 'variant 1', expected([150, 820], [120, 800]));
    expect(await row('personalization_results', 'wp-1', 'Control')).toMatchObject({
      is_control: true,
      test_name: 'Returning visitor greeting',
    });
    const leaked = await t.db
      .selectFrom('ab_test_results')
      .select('test_id')
      .where('test_id', '=', 'wp-1')
      .execute();
    expect(leaked).toEqual([]);
  });
});
