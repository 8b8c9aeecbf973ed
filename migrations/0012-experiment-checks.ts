import { type Kysely, sql } from 'kysely';

/**
 * What an experimenter checks before believing a result. Frozen once shipped,
 * like the others.
 *
 * - chi_square_p_value(x, df): the upper tail of the chi-square distribution, in closed form.
 * - ab_test_results and personalization_results keep every column they had, in order, and gain:
 *   a sample-ratio-mismatch check per test (chi-square of the variants' totals against equal
 *   allocation: the API says nothing of the intended split, so equal is an assumption) and
 *   Holm-adjusted p-values across a test's comparisons with its control.
 *
 * Each view is replaced by itself (its definition as the database holds it, pg_get_viewdef) with
 * the new columns after the old ones: whatever earlier migrations made of it stays as it was.
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

const VIEWS = ['ab_test_results', 'personalization_results'] as const;

/** p below which the views flag a mismatch: the threshold commonly used for SRM, strict because every test is checked. */
const SRM_THRESHOLD = '0.001';

const NEW_COLUMNS = {
  srm_chi_square:
    "Sample-ratio-mismatch check of the test: Pearson's chi-square statistic of the totals of its current variants (removed_at null) against an equal split of their sum. ASSUMPTION: the API does not say how a test splits its traffic; equal allocation is assumed. Null for a removed variant, a test with fewer than 2 current variants, no visitors, or a negative total.",
  srm_p_value:
    'p-value of srm_chi_square (chi-square with variants - 1 degrees of freedom): the probability of a split at least this uneven if traffic really were split equally. Tiny values mean the assignment or the counting is broken (or the split is not equal by design: see srm_chi_square), and the results of the test should not be trusted. Same value on every row of the test.',
  sample_ratio_mismatch: `True when srm_p_value < ${SRM_THRESHOLD}: the totals are too uneven for an equal split (see srm_chi_square for the assumption). Null when srm_p_value is.`,
  p_value_holm:
    "p_value adjusted for the test's several comparisons with its control (Holm's step-down method across the current variants with a p_value): compare it with 0.05 to keep the chance of any false positive in the test at 5%. Equals p_value when the test has one comparison. Null where p_value is, and for removed variants.",
} as const;

export async function up(db: AnyDb): Promise<void> {
  await createChiSquare(db);
  for (const view of VIEWS) {
    const before = await viewDefinition(db, view);
    const columns = await viewColumns(db, view);
    await sql`create or replace view ${sql.table(view)} as ${sql.raw(
      withChecks(
        before,
        columns.map((c) => c.name),
      ),
    )}`.execute(db);
    for (const [column, comment] of Object.entries(NEW_COLUMNS))
      await sql`comment on column ${sql.ref(`${view}.${column}`)} is ${sql.lit(comment)}`.execute(db);
  }
}

export async function down(db: AnyDb): Promise<void> {
  for (const view of VIEWS) {
    // PostgreSQL cannot drop a view's columns in place: the view is made again from the query
    // up() wrapped (the `base` of its WITH clause), with its comments.
    const base = baseQuery(await viewDefinition(db, view));
    const kept = (await viewColumns(db, view)).filter((c) => !(c.name in NEW_COLUMNS));
    const comment = await sql<{ comment: string | null }>`
      select obj_description(${view}::regclass, 'pg_class') as comment`.execute(db);
    await sql`drop view ${sql.table(view)}`.execute(db);
    await sql`create view ${sql.table(view)} as ${sql.raw(base)}`.execute(db);
    const text = comment.rows[0]?.comment;
    if (text) await sql`comment on view ${sql.table(view)} is ${sql.lit(text)}`.execute(db);
    for (const c of kept)
      if (c.comment !== null)
        await sql`comment on column ${sql.ref(`${view}.${c.name}`)} is ${sql.lit(c.comment)}`.execute(db);
  }
  await sql`drop function chi_square_p_value(double precision, integer)`.execute(db);
}

/**
 * The query inside `WITH base AS (...)` of a definition up() made: from the opening parenthesis
 * to its match, skipping parentheses inside string literals and quoted identifiers.
 */
function baseQuery(definition: string): string {
  const start = /^\s*WITH base AS \(/i.exec(definition);
  if (!start) throw new Error('the view was not made by migration 0012: no WITH base AS (...)');
  let depth = 1;
  let quote: string | null = null;
  for (let i = start[0].length; i < definition.length; i++) {
    const char = definition[i];
    if (quote !== null) {
      if (char === quote) quote = null;
      continue;
    }
    if (char === "'" || char === '"') quote = char;
    else if (char === '(') depth += 1;
    else if (char === ')' && --depth === 0) return definition.slice(start[0].length, i);
  }
  throw new Error('the WITH base AS (...) of the view does not close');
}

async function viewColumns(db: AnyDb, view: string): Promise<{ name: string; comment: string | null }[]> {
  const columns = await sql<{ name: string; comment: string | null }>`
    select attname as name, col_description(attrelid, attnum) as comment from pg_attribute
     where attrelid = ${view}::regclass and attnum > 0 and not attisdropped order by attnum`.execute(db);
  return columns.rows;
}

async function viewDefinition(db: AnyDb, view: string): Promise<string> {
  const found = await sql<{ definition: string }>`
    select pg_get_viewdef(${view}::regclass) as definition`.execute(db);
  const definition = found.rows[0]?.definition;
  if (definition === undefined) throw new Error(`view ${view} not found`);
  // pg_get_viewdef ends the query with a semicolon, which a subquery must not have.
  return definition.trim().replace(/;$/, '');
}

/**
 * The view's rows with the checks. Only current variants (removed_at null) take part: a removed
 * variant's last totals no longer belong to the split. Holm: the test's m p-values sorted
 * ascending, the i-th scaled by (m - i + 1), then made non-decreasing (running maximum), capped at 1.
 */
function withChecks(base: string, columns: readonly string[]): string {
  const kept = columns.map((c) => `s.${quoteIdent(c)}`).join(', ');
  return `
    with base as (${base})
    select ${kept},
           case when s.current then s.chi_square end as srm_chi_square,
           case when s.current then chi_square_p_value(s.chi_square, (s.variants - 1)::integer) end as srm_p_value,
           case when s.current then chi_square_p_value(s.chi_square, (s.variants - 1)::integer) < ${SRM_THRESHOLD} end
             as sample_ratio_mismatch,
           case when s.current and s.p_value is not null then
             least(1, max(s.holm_scaled) over (partition by s.source_id, s.test_id, s.current
                                                order by s.p_value, s.variant rows unbounded preceding))
           end as p_value_holm
    from (
      select n.*,
             case when n.variants >= 2 and n.visitors > 0 and n.valid then
               sum((n.total - n.visitors / n.variants) ^ 2 / (n.visitors / n.variants))
                 over (partition by n.source_id, n.test_id, n.current)
             end as chi_square,
             (n.comparisons - row_number() over (partition by n.source_id, n.test_id, n.current
                                                  order by n.p_value, n.variant) + 1) * n.p_value as holm_scaled
      from (
        select b.*, b.removed_at is null as current,
               count(*) over t as variants,
               (sum(b.total) over t)::double precision as visitors,
               bool_and(b.total >= 0) over t as valid,
               count(b.p_value) over t as comparisons
        from base b
        window t as (partition by b.source_id, b.test_id, b.removed_at is null)
      ) n
    ) s`;
}

function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/**
 * chi_square_p_value(x, df) = P(X >= x) for X chi-square with df degrees of freedom: the
 * regularized upper incomplete gamma function Q(df/2, x/2), in its closed forms.
 *   df even, df = 2m:    Q = e^(-h) * sum_{j=0}^{m-1} h^j / j!                     (h = x/2)
 *   df odd, df = 2m + 1: Q = erfc(sqrt h) + e^(-h) * sum_{j=1}^{m} h^(j-1/2) / Gamma(j + 1/2)
 * Terms are summed from their logarithms (exp(-h) alone underflows beyond h = 745, which
 * PostgreSQL reports as an error); a term below e^-700 adds nothing a double can hold next to
 * the others. erfc(sqrt h) = two_sided_p_value(sqrt x) of migration 0004, good to 1.2e-7 relative.
 */
async function createChiSquare(db: AnyDb): Promise<void> {
  await sql`
    create function chi_square_p_value(x double precision, df integer) returns double precision
    language plpgsql immutable strict parallel safe as $$
    declare
      h double precision := x / 2;
      total double precision := 0;
      log_term double precision;
    begin
      if df < 1 or x = 'NaN'::double precision then return null; end if;
      if x <= 0 then return 1; end if;
      if df % 2 = 0 then
        log_term := -h;
        for j in 0 .. df / 2 - 1 loop
          if j > 0 then log_term := log_term + ln(h) - ln(j); end if;
          if log_term > -700 then total := total + exp(log_term); end if;
        end loop;
      else
        total := two_sided_p_value(sqrt(x));
        -- Gamma(3/2) = sqrt(pi) / 2.
        log_term := -h + 0.5 * ln(h) - ln(sqrt(pi()) / 2);
        for j in 1 .. (df - 1) / 2 loop
          if j > 1 then log_term := log_term + ln(h) - ln(j - 0.5); end if;
          if log_term > -700 then total := total + exp(log_term); end if;
        end loop;
      end if;
      return least(1, total);
    end $$`.execute(db);
  await sql`
    comment on function chi_square_p_value(double precision, integer) is
    'Upper tail P(X >= x) of the chi-square distribution with df degrees of freedom (closed forms of the regularized incomplete gamma function). Relative error below 1.2e-7 for odd df (erfc), rounding only for even df.'`.execute(
    db,
  );
}
