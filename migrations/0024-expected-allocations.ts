import { type Kysely, sql } from 'kysely';

/**
 * A sample-ratio-mismatch check only where a split is declared, and one verdict per variant.
 * Frozen once shipped.
 *
 * 0012 checked every test's totals against an equal split, an assumption the API cannot confirm
 * (it says nothing of allocation): every test allocated otherwise carried an alarm, so the alarm
 * meant nothing. The expected split is now declared (config: a source's default and per test,
 * stored by each run in expected_allocations); a test without one gets no check and
 * srm_status 'allocation unknown'. ab_test_results and personalization_results keep their
 * columns in order (srm_chi_square, srm_p_value and sample_ratio_mismatch now against the
 * declared split, null without one) and gain expected_share, srm_status and verdict, which joins
 * the Holm-adjusted p-value, the lift's sign and the SRM check: an untrustworthy test is never a
 * winner.
 *
 * Each view is made from the query inside its `WITH base AS (...)` (0012), as 0012's down does.
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

const VIEWS = ['ab_test_results', 'personalization_results'] as const;

/** As in 0012: strict, because every test with a declared split is checked. */
const SRM_THRESHOLD = '0.001';
/** The level the verdict calls significant, on the Holm-adjusted p-value. */
const ALPHA = '0.05';

const TABLE_COMMENTS = {
  '': "The traffic split each test is meant to have, as declared in the config (a source's expected_allocation: its default and per test), written by every run: the sample-ratio-mismatch check of ab_test_results and personalization_results compares the variants' totals with it. A test without a declared split is not checked (srm_status 'allocation unknown').",
  source_id: 'The configured source name.',
  test_id:
    "The test the weight is declared for; '*' for the source's default, used by tests without rows of their own.",
  variant:
    "The variant label (as the API names it); '*' for every variant without a row of its own (an equal weight each, when it is the only row: an equal split).",
  weight:
    "The variant's weight: its expected share of the test's visitors is weight / the sum of the weights of the test's current variants.",
} as const;

const VIEW_COMMENTS = {
  srm_chi_square:
    "Sample-ratio-mismatch check of the test: Pearson's chi-square statistic of the totals of its current variants (removed_at null) against the split declared in expected_allocations. Null without a declared split (srm_status 'allocation unknown'), for a removed variant, a test with fewer than 2 current variants, no visitors, or a negative total.",
  srm_p_value:
    'p-value of srm_chi_square (chi-square with variants - 1 degrees of freedom): the probability of a split at least this far from the declared one if traffic really were split as declared. Tiny values mean the assignment or the counting is broken, and the results of the test should not be trusted. Same value on every row of the test; null when srm_chi_square is.',
  sample_ratio_mismatch: `True when srm_p_value < ${SRM_THRESHOLD}: the totals are too far from the declared split. Null without a declared split: the API does not say how a test splits its traffic.`,
  expected_share:
    "The variant's share of the test's visitors by the declared split (0..1); null without one (srm_status 'allocation unknown') and for removed variants.",
  srm_status: `'allocation unknown' (no split declared for the test: not checked), 'mismatch' (srm_p_value < ${SRM_THRESHOLD}), 'ok', or 'not computable' (fewer than 2 current variants, no visitors, a negative total). Null for removed variants.`,
  verdict: `'untrustworthy' (the test has a sample ratio mismatch: none of its results holds, the control's row included); otherwise, against the control: 'winner' (p_value_holm < ${ALPHA} and the variant converts better), 'loser' (p_value_holm < ${ALPHA}, worse), 'inconclusive' (p_value_holm >= ${ALPHA}, or no difference). Null for the control, removed variants and rows without a p-value.`,
} as const;

const NEW_COLUMNS = ['expected_share', 'srm_status', 'verdict'] as const;
const REPLACED = ['srm_chi_square', 'srm_p_value', 'sample_ratio_mismatch', 'p_value_holm'] as const;

export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('expected_allocations')
    .addColumn('source_id', 'text', (c) => c.notNull().references('sources.source_id'))
    .addColumn('test_id', 'text', (c) => c.notNull())
    .addColumn('variant', 'text', (c) => c.notNull())
    .addColumn('weight', 'double precision', (c) =>
      c.notNull().check(sql`weight > 0 and weight < 'Infinity'`),
    )
    .addPrimaryKeyConstraint('expected_allocations_pkey', ['source_id', 'test_id', 'variant'])
    .execute();
  for (const [column, text] of Object.entries(TABLE_COMMENTS)) {
    if (column === '') await sql`comment on table expected_allocations is ${sql.lit(text)}`.execute(db);
    else
      await sql`comment on column ${sql.ref(`expected_allocations.${column}`)} is ${sql.lit(text)}`.execute(
        db,
      );
  }
  for (const view of VIEWS) {
    const base = baseQuery(await viewDefinition(db, view));
    const kept = (await viewColumns(db, view)).filter(
      (c) => !(REPLACED as readonly string[]).includes(c) && !(NEW_COLUMNS as readonly string[]).includes(c),
    );
    await sql`create or replace view ${sql.table(view)} as ${sql.raw(withDeclaredSplit(base, kept, 'declared'))}`.execute(
      db,
    );
    for (const [column, text] of Object.entries(VIEW_COMMENTS))
      await sql`comment on column ${sql.ref(`${view}.${column}`)} is ${sql.lit(text)}`.execute(db);
  }
}

/**
 * Back to 0012's check against an equal split: the views are made again (they cannot lose columns
 * in place) with every current variant weighing 1, and their comments.
 */
export async function down(db: AnyDb): Promise<void> {
  for (const view of VIEWS) {
    const base = baseQuery(await viewDefinition(db, view));
    const columns = await sql<{ name: string; comment: string | null }>`
      select attname as name, col_description(attrelid, attnum) as comment from pg_attribute
       where attrelid = ${view}::regclass and attnum > 0 and not attisdropped order by attnum`.execute(db);
    const viewComment = await sql<{ comment: string | null }>`
      select obj_description(${view}::regclass, 'pg_class') as comment`.execute(db);
    const kept = columns.rows.filter(
      (c) =>
        !(REPLACED as readonly string[]).includes(c.name) &&
        !(NEW_COLUMNS as readonly string[]).includes(c.name),
    );
    await sql`drop view ${sql.table(view)}`.execute(db);
    await sql`create view ${sql.table(view)} as ${sql.raw(
      withDeclaredSplit(
        base,
        kept.map((c) => c.name),
        'equal',
      ),
    )}`.execute(db);
    const text = viewComment.rows[0]?.comment;
    if (text) await sql`comment on view ${sql.table(view)} is ${sql.lit(text)}`.execute(db);
    for (const c of kept)
      if (c.comment !== null)
        await sql`comment on column ${sql.ref(`${view}.${c.name}`)} is ${sql.lit(c.comment)}`.execute(db);
    for (const [column, comment] of Object.entries(EQUAL_SPLIT_COMMENTS))
      await sql`comment on column ${sql.ref(`${view}.${column}`)} is ${sql.lit(comment)}`.execute(db);
  }
  await db.schema.dropTable('expected_allocations').execute();
}

/** 0012's comments of the columns it made, for down. */
const EQUAL_SPLIT_COMMENTS = {
  srm_chi_square:
    "Sample-ratio-mismatch check of the test: Pearson's chi-square statistic of the totals of its current variants (removed_at null) against an equal split of their sum. ASSUMPTION: the API does not say how a test splits its traffic; equal allocation is assumed. Null for a removed variant, a test with fewer than 2 current variants, no visitors, or a negative total.",
  srm_p_value:
    'p-value of srm_chi_square (chi-square with variants - 1 degrees of freedom): the probability of a split at least this uneven if traffic really were split equally. Tiny values mean the assignment or the counting is broken (or the split is not equal by design: see srm_chi_square), and the results of the test should not be trusted. Same value on every row of the test.',
  sample_ratio_mismatch: `True when srm_p_value < ${SRM_THRESHOLD}: the totals are too uneven for an equal split (see srm_chi_square for the assumption). Null when srm_p_value is.`,
  p_value_holm:
    "p_value adjusted for the test's several comparisons with its control (Holm's step-down method across the current variants with a p_value): compare it with 0.05 to keep the chance of any false positive in the test at 5%. Equals p_value when the test has one comparison. Null where p_value is, and for removed variants.",
} as const;

/**
 * The weight of each current variant: the test's own rows (its variant, else '*'), or, when the
 * test has none, the source's default ('*' test). A test with a current variant without a weight
 * has no declared split.
 */
function withDeclaredSplit(base: string, columns: readonly string[], split: 'declared' | 'equal'): string {
  const kept = columns.map((c) => `f.${quoteIdent(c)}`).join(', ');
  const added =
    split === 'declared'
      ? `,
           f.expected_share, f.srm_status,
           case when not f.current then null
                when f.srm_status = 'mismatch' then 'untrustworthy'
                when f.p_value_holm is null then null
                when f.p_value_holm < ${ALPHA} and f.absolute_lift > 0 then 'winner'
                when f.p_value_holm < ${ALPHA} and f.absolute_lift < 0 then 'loser'
                else 'inconclusive' end as verdict`
      : '';
  const weightOf = (test: string) => `(select e.weight from expected_allocations e
                 where e.source_id = b.source_id and e.test_id = ${test} and e.variant in (b.variant, '*')
                 order by e.variant = '*' limit 1)`;
  const weight =
    split === 'equal'
      ? '1::double precision'
      : `case when exists (select 1 from expected_allocations e
                                      where e.source_id = b.source_id and e.test_id = b.test_id)
                        then ${weightOf('b.test_id')} else ${weightOf("'*'")} end`;
  const p = `chi_square_p_value(s.chi_square, (s.variants - 1)::integer)`;
  return `
    with base as (${base})
    select ${kept}, f.srm_chi_square, f.srm_p_value, f.sample_ratio_mismatch, f.p_value_holm${added}
    from (
      select s.*,
             case when s.current then s.chi_square end as srm_chi_square,
             case when s.current then ${p} end as srm_p_value,
             case when s.current then ${p} < ${SRM_THRESHOLD} end as sample_ratio_mismatch,
             case when s.current and s.p_value is not null then
               least(1, max(s.holm_scaled) over (partition by s.source_id, s.test_id, s.current
                                                  order by s.p_value, s.variant rows unbounded preceding))
             end as p_value_holm,
             case when s.current and s.allocated then s.weight / s.weight_sum end as expected_share,
             case when not s.current then null
                  when not s.allocated then 'allocation unknown'
                  when s.chi_square is null then 'not computable'
                  when ${p} < ${SRM_THRESHOLD} then 'mismatch'
                  else 'ok' end as srm_status
      from (
        select n.*,
               case when n.allocated and n.variants >= 2 and n.visitors > 0 and n.valid then
                 sum((n.total - n.visitors * n.weight / n.weight_sum) ^ 2 / (n.visitors * n.weight / n.weight_sum))
                   over (partition by n.source_id, n.test_id, n.current)
               end as chi_square,
               (n.comparisons - row_number() over (partition by n.source_id, n.test_id, n.current
                                                    order by n.p_value, n.variant) + 1) * n.p_value as holm_scaled
        from (
          select a.*,
                 count(*) over t as variants,
                 (sum(a.total) over t)::double precision as visitors,
                 bool_and(a.total >= 0) over t as valid,
                 count(a.p_value) over t as comparisons,
                 bool_and(a.weight is not null) over t as allocated,
                 sum(a.weight) over t as weight_sum
          from (
            select b.*, b.removed_at is null as current, ${weight} as weight
            from base b
          ) a
          window t as (partition by a.source_id, a.test_id, a.current)
        ) n
      ) s
    ) f`;
}

/** The query inside `WITH base AS (...)` of a definition 0012 made (as 0012's baseQuery). */
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

async function viewColumns(db: AnyDb, view: string): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`
    select attname as name from pg_attribute
     where attrelid = ${view}::regclass and attnum > 0 and not attisdropped order by attnum`.execute(db);
  return rows.map((r) => r.name);
}

async function viewDefinition(db: AnyDb, view: string): Promise<string> {
  const { rows } = await sql<{
    definition: string;
  }>`select pg_get_viewdef(${view}::regclass) as definition`.execute(db);
  const definition = rows[0]?.definition;
  if (definition === undefined) throw new Error(`view ${view} not found`);
  return definition.trim().replace(/;$/, '');
}

function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
