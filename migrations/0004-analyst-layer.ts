import { type Kysely, type RawBuilder, sql } from 'kysely';

/**
 * The analyst layer: what people see in psql, Metabase and other BI tools. Frozen once shipped,
 * like the others.
 *
 * - Views over the tables of 0001 and 0002: test statistics, daily test trends, feedback and
 *   survey answers with their visitor, daily activity and sync health.
 * - Indexes for the questions analysts ask (docs/warehouse.md, "Example queries"): by time (dt,
 *   and the UTC day the views group by), page, visitor, question and test.
 * - COMMENT ON every table, view and column, so a BI tool shows the meaning next to the name.
 *   docs/warehouse.md is generated from these comments (npm run docs:warehouse), and
 *   test/analyst/dictionary.test.ts fails when a column has none or the document is out of date.
 *
 * Migration 0002 (webhooks) has no comments of its own: its table and its `origin` columns are
 * commented here.
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

/** z of a two-sided 95% interval: the 0.975 quantile of the standard normal distribution. */
const Z95 = '1.959963984540054';

export async function up(db: AnyDb): Promise<void> {
  await createStatisticsFunctions(db);
  await createIndexes(db);
  await createViews(db);
  await commentEverything(db);
}

export async function down(db: AnyDb): Promise<void> {
  for (const view of [
    'sync_health',
    'daily_activity',
    'survey_answers_enriched',
    'feedback_enriched',
    'test_result_daily',
    'personalization_results',
    'ab_test_results',
  ]) {
    await db.schema.dropView(view).execute();
  }
  for (const index of INDEXES) await db.schema.dropIndex(index.name).execute();
  await sql`drop function two_sided_p_value(double precision)`.execute(db);
  // Comments on the tables of 0001 and 0002 go with their tables; leaving them here is harmless.
}

// ---------------------------------------------------------------------------------------------
// Statistics

/**
 * two_sided_p_value(z) = P(|Z| >= |z|) for a standard normal Z = erfc(|z| / sqrt 2).
 *
 * PostgreSQL 15 has no erf/erfc. erfc is the Chebyshev fit of Numerical Recipes (erfcc, 2nd ed.,
 * 6.2), whose *relative* error is below 1.2e-7 everywhere: small p-values keep their digits,
 * which an absolute-error approximation of the normal CDF would not. Beyond |z| = 37 the p-value
 * is below 1e-298 and is returned as 0 (exp would underflow, which PostgreSQL reports as an error).
 */
async function createStatisticsFunctions(db: AnyDb): Promise<void> {
  await sql`
    create function two_sided_p_value(z double precision) returns double precision
    language sql immutable strict parallel safe as $$
      select case
        when abs(z) > 37 then 0::double precision
        -- The fit is 1.00000003 at z = 0: a probability is at most 1.
        else least(1, t * exp(-x * x - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418
             + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587
             + t * (-0.82215223 + t * 0.17087277))))))))))
      end
      from (select x, 1 / (1 + 0.5 * x) as t from (select abs(z) / sqrt(2::double precision) as x) a) b
    $$`.execute(db);
  await sql`
    comment on function two_sided_p_value(double precision) is
    'Two-sided p-value of a standard normal test statistic z: P(|Z| >= |z|) = erfc(|z|/sqrt(2)). Relative error below 1.2e-7 (Numerical Recipes erfcc); 0 beyond |z| = 37.'`.execute(
    db,
  );
}

// ---------------------------------------------------------------------------------------------
// Indexes

interface IndexSpec {
  name: string;
  table: string;
  /** SQL of the indexed columns or expressions. */
  on: string;
}

/**
 * Each serves example queries of docs/warehouse.md; test/analyst/example-query-plans.explain.ts
 * checks on a warehouse of a million feedback rows that they do (npm run test:explain). The
 * UTC-day expression indexes serve the views' `day` column (daily_activity, feedback_enriched,
 * survey_answers_enriched): a filter on `day` becomes a filter on the expression, which only an
 * index on the same expression serves.
 */
const UTC_DAY = `((dt at time zone 'UTC')::date)`;
const INDEXES: IndexSpec[] = [
  { name: 'feedback_dt_idx', table: 'feedback', on: 'dt' },
  { name: 'feedback_day_idx', table: 'feedback', on: UTC_DAY },
  { name: 'feedback_url_dt_idx', table: 'feedback', on: 'url, dt' },
  { name: 'feedback_visitor_idx', table: 'feedback', on: 'source_id, visitor_id' },
  { name: 'survey_answers_dt_idx', table: 'survey_answers', on: 'dt' },
  { name: 'survey_answers_day_idx', table: 'survey_answers', on: UTC_DAY },
  { name: 'survey_answers_question_dt_idx', table: 'survey_answers', on: 'question_id, dt' },
  { name: 'survey_answers_visitor_idx', table: 'survey_answers', on: 'source_id, visitor_id' },
  { name: 'recordings_dt_idx', table: 'recordings', on: 'dt' },
  { name: 'recordings_day_idx', table: 'recordings', on: UTC_DAY },
  { name: 'test_results_test_idx', table: 'test_results', on: 'test_id' },
  { name: 'test_result_history_test_day_idx', table: 'test_result_history', on: 'test_id, day' },
];

async function createIndexes(db: AnyDb): Promise<void> {
  for (const index of INDEXES) {
    await sql`create index ${sql.id(index.name)} on ${sql.table(index.table)} (${sql.raw(index.on)})`.execute(
      db,
    );
  }
}

// ---------------------------------------------------------------------------------------------
// Views

async function createViews(db: AnyDb): Promise<void> {
  await sql`create view ab_test_results as ${testResultsQuery('abtesting', 'ab_tests')}`.execute(db);
  await sql`create view personalization_results as ${testResultsQuery('personalization', 'personalization_tests')}`.execute(
    db,
  );

  // Increments are against the previous snapshot of the same variant, which is the day before
  // only when a run happened every day: previous_day says which.
  await sql`
    create view test_result_daily as
    select h.source_id, h.test_kind, h.test_id,
           coalesce(a.test_name, p.test_name) as test_name,
           h.variant, lower(h.variant) = 'control' as is_control,
           h.day, h.complete, h.total,
           case when h.total > 0 then h.complete::double precision / h.total end as conversion,
           lag(h.day) over w as previous_day,
           h.complete - lag(h.complete) over w as complete_increment,
           h.total - lag(h.total) over w as total_increment,
           h.captured_at
    from test_result_history h
    left join ab_tests a on h.test_kind = 'abtesting' and a.source_id = h.source_id and a.id = h.test_id
    left join personalization_tests p
      on h.test_kind = 'personalization' and p.source_id = h.source_id and p.id = h.test_id
    window w as (partition by h.source_id, h.test_kind, h.test_id, h.variant order by h.day)`.execute(db);

  await sql`
    create view feedback_enriched as
    select f.source_id, f.id, f.feedback_id, f.question, f.session, f.comment, f.rating, f.rating_text,
           f.dt, (f.dt at time zone 'UTC')::date as day, f.url, f.screenshot, f.origin,
           f.visitor_id, v.device, v.browser, v.os, v.landing_page, v.ref_page
    from feedback f
    left join visitors v on v.source_id = f.source_id and v.id = f.visitor_id`.execute(db);

  await sql`
    create view survey_answers_enriched as
    select s.source_id, s.id, s.question_id, s.question, s.comment as answer, s.session,
           s.dt, (s.dt at time zone 'UTC')::date as day, s.url, s.origin,
           s.visitor_id, v.device, v.browser, v.os, v.landing_page, v.ref_page
    from survey_answers s
    left join visitors v on v.source_id = s.source_id and v.id = s.visitor_id`.execute(db);

  // One scan per table, stacked and grouped once: a filter on day reaches each table's day index.
  await sql`
    create view daily_activity as
    select source_id, day,
           count(*) filter (where kind = 'feedback') as feedback_count,
           avg(rating)::double precision as average_rating,
           count(*) filter (where kind = 'survey') as survey_answer_count,
           count(distinct response_id) as survey_response_count,
           count(*) filter (where kind = 'recording') as recording_count,
           avg(duration)::double precision as average_recording_duration
    from (
      select source_id, ${sql.raw(UTC_DAY)} as day, 'feedback' as kind, rating,
             null::bigint as response_id, null::integer as duration
      from feedback where dt is not null
      union all
      select source_id, ${sql.raw(UTC_DAY)}, 'survey', null, id, null
      from survey_answers where dt is not null
      union all
      select source_id, ${sql.raw(UTC_DAY)}, 'recording', null, null, duration
      from recordings
    ) items
    group by source_id, day`.execute(db);

  // Mirrors `insights-sync status` (src/sync/status-report.ts): lag counts from yesterday, the
  // last day that can be done; rejects of test results are filed under '<kind>/detail'.
  await sql`
    create view sync_health as
    select s.source_id, r.resource, r.kind,
           w.start_day, w.day as watermark,
           case when r.kind = 'windowed' and w.day is not null
                then greatest(0, ((now() at time zone 'UTC')::date - 1) - w.day) end as lag_days,
           coalesce(sw.truncated_days, 0) as truncated_days, sw.last_truncated_day,
           coalesce(sw.failed_days, 0) as failed_days,
           coalesce(rj.rejected_items, 0) as rejected_items,
           case r.resource
             when 'abtesting' then (select max(last_seen_at) from ab_tests x where x.source_id = s.source_id)
             when 'personalization'
               then (select max(last_seen_at) from personalization_tests x where x.source_id = s.source_id)
             when 'heatmaps' then (select max(last_seen_at) from heatmaps x where x.source_id = s.source_id)
             else sw.last_fetched_at
           end as last_loaded_at,
           lr.run_id as last_run_id, lr.status as last_run_status,
           lr.started_at as last_run_started_at, lr.finished_at as last_run_finished_at
    from sources s
    cross join (values ('feedback', 'windowed', 1), ('survey', 'windowed', 2), ('recordings', 'windowed', 3),
                       ('abtesting', 'snapshot', 4), ('personalization', 'snapshot', 5),
                       ('heatmaps', 'snapshot', 6)) r(resource, kind, position)
    left join watermarks w on w.source_id = s.source_id and w.resource = r.resource
    left join lateral (
      select count(*) filter (where truncated) as truncated_days,
             max(day) filter (where truncated) as last_truncated_day,
             count(*) filter (where status = 'failed') as failed_days,
             max(fetched_at) as last_fetched_at
      from sync_windows x where x.source_id = s.source_id and x.resource = r.resource
    ) sw on true
    left join lateral (
      select count(*) as rejected_items from rejects x
      where x.source_id = s.source_id and x.resource in (r.resource, r.resource || '/detail')
    ) rj on true
    left join lateral (
      select run_id, status, started_at, finished_at from sync_runs x
      where x.summary -> s.source_id -> r.resource is not null
      order by run_id desc limit 1
    ) lr on true
    order by s.source_id, r.position`.execute(db);
}

/**
 * The latest result of each variant with its test, and the statistics against the control.
 *
 * complete and total are not defined by the spec; the statistics assume complete counts goal
 * completions among total visitors (conversion = complete / total). Per variant: a Wilson 95%
 * interval of the conversion. Against the control (the variant named 'control', any case):
 * absolute lift (difference of conversions) with an unpooled (Wald) 95% interval, relative lift,
 * and the two-proportion z-test with the pooled standard error. Undefined statistics are null:
 * total 0, complete outside 0..total, no control, or the control row itself. When both
 * conversions are 0% (or both 100%) the pooled standard error is 0 and so is the difference: z 0,
 * p-value 1.
 */
function testResultsQuery(kind: string, testTable: string): RawBuilder<unknown> {
  const tests = sql.table(testTable);
  const z = sql.raw(Z95);
  const z2 = sql.raw(`(${Z95} * ${Z95})`);
  return sql`
    select r.source_id, r.test_id, t.test_name, t.url, t.goal_profile_id,
           r.variant, lower(r.variant) = 'control' as is_control,
           r.complete, r.total,
           case when r.total > 0 then r.complete::double precision / r.total end as conversion,
           w.center - w.half as conversion_ci_low,
           w.center + w.half as conversion_ci_high,
           c.variant as control_variant,
           case when c.ok then c.p end as control_conversion,
           case when s.ok then v.p - c.p end as absolute_lift,
           case when s.ok and c.p > 0 then (v.p - c.p) / c.p end as relative_lift,
           case when s.ok then v.p - c.p - ${z} * s.se_lift end as lift_ci_low,
           case when s.ok then v.p - c.p + ${z} * s.se_lift end as lift_ci_high,
           case when s.ok then case when s.se_pooled > 0 then (v.p - c.p) / s.se_pooled else 0 end end as z_score,
           case when s.ok then case when s.se_pooled > 0 then two_sided_p_value((v.p - c.p) / s.se_pooled) else 1 end end
             as p_value,
           r.last_seen_at, r.last_changed_at,
           coalesce(r.removed_at, t.removed_at) as removed_at
    from test_results r
    left join ${tests} t on t.source_id = r.source_id and t.id = r.test_id
    cross join lateral (
      select r.total > 0 and r.complete between 0 and r.total as ok,
             r.total::double precision as n,
             case when r.total > 0 then r.complete::double precision / r.total end as p
    ) v
    -- Wilson score interval: (p + z²/2n ± z sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n). CASE, not a
    -- WHERE: the planner flattens the subquery and would divide by a total of 0.
    cross join lateral (
      select case when v.ok then (v.p + ${z2} / (2 * v.n)) / (1 + ${z2} / v.n) end as center,
             case when v.ok then ${z} * sqrt(v.p * (1 - v.p) / v.n + ${z2} / (4 * v.n * v.n)) / (1 + ${z2} / v.n) end
               as half
    ) w
    left join lateral (
      select x.variant, x.complete, x.total,
             x.total > 0 and x.complete between 0 and x.total as ok,
             case when x.total > 0 then x.complete::double precision / x.total end as p
      from test_results x
      where x.source_id = r.source_id and x.test_kind = r.test_kind and x.test_id = r.test_id
        and lower(x.variant) = 'control'
      order by x.variant = 'control' desc, x.variant
      limit 1
    ) c on true
    cross join lateral (
      select coalesce(v.ok and c.ok and c.variant <> r.variant, false) as ok,
             sqrt(case when v.ok and c.ok then v.p * (1 - v.p) / r.total + c.p * (1 - c.p) / c.total end) as se_lift,
             sqrt(case when v.ok and c.ok then
                    (r.complete + c.complete)::double precision / (r.total + c.total)
                    * (1 - (r.complete + c.complete)::double precision / (r.total + c.total))
                    * (1.0 / r.total + 1.0 / c.total) end) as se_pooled
    ) s
    where r.test_kind = ${sql.lit(kind)}`;
}

// ---------------------------------------------------------------------------------------------
// Comments

interface Described {
  kind: 'table' | 'view';
  comment: string;
  columns: Record<string, string>;
}

const SOURCE_ID =
  'The configured source (a Website Insights account read through one base URL) this row came from; see sources.';
const RAW = 'The item exactly as the API returned it (JSON), including fields the spec does not list.';
const FIRST_SEEN = 'When insights-sync first stored this row.';
const LAST_CHANGED =
  'When a load last changed this row (a different item came for the same key); equals first_seen_at if it never changed.';
const LAST_SEEN = 'When a run last fetched a list that contained this row.';
const REMOVED =
  'Set when a complete snapshot no longer lists this row (deleted at the service); null while it is listed. Rows are kept, never deleted.';
const ORIGIN =
  "Which path has delivered the row: 'api' (the sync), 'webhook' (provisional: only the webhook has, so dt, url and the rating are still null) or 'both' (seen by both; the API's values win).";
const VISITOR_ID = 'Id of the visitor (spec 2.6 visitor.id); join visitors on (source_id, visitor_id = id).';
const NOT_DOCUMENTED = 'not documented by the service';
const STAT_ASSUMPTION =
  'The spec does not define complete and total: the statistics assume complete counts goal completions among total visitors.';

function testsTable(endpoint: string, what: string): Described {
  return {
    kind: 'table',
    comment: `${what} (spec 2.1, GET ${endpoint}), read whole on every run. A test the service no longer lists keeps its row, with removed_at set.`,
    columns: {
      source_id: SOURCE_ID,
      id: 'Identifier of the test (spec 2.1). Key with source_id.',
      test_name: 'Name of the test (spec 2.1).',
      url: 'Page address the test applies to (spec 2.1).',
      goal_profile_id: `Identifier of the goal profile (spec 2.1); goal profiles themselves are ${NOT_DOCUMENTED}.`,
      created_at: 'When the test was created, as the service reports it (spec 2.1).',
      updated_at: 'When the test was last updated, as the service reports it (spec 2.1).',
      raw: RAW,
      first_seen_at: FIRST_SEEN,
      last_seen_at: LAST_SEEN,
      last_changed_at: LAST_CHANGED,
      removed_at: REMOVED,
    },
  };
}

function resultsView(label: string, kind: string, testTable: string): Described {
  return {
    kind: 'view',
    comment: `The latest ${label} results per test and variant (test_results of kind ${kind}, with the test from ${testTable}), with conversion and the statistics against the control variant. ${STAT_ASSUMPTION} Null where a statistic is undefined (total 0, no control variant, or the control row itself).`,
    columns: {
      source_id: SOURCE_ID,
      test_id: `Identifier of the test (${testTable}.id).`,
      test_name: `Name of the test (${testTable}.test_name); null if the test list never named it.`,
      url: 'Page address the test applies to.',
      goal_profile_id: 'Identifier of the goal profile of the test.',
      variant: "Variant label (spec 2.2); the variant named 'control' (any case) is the control.",
      is_control: 'True for the control variant.',
      complete: `complete as reported (spec 2.2; meaning ${NOT_DOCUMENTED}; assumed: goal completions).`,
      total: `total as reported (spec 2.2; meaning ${NOT_DOCUMENTED}; assumed: visitors).`,
      conversion: 'complete / total (0..1); null when total is 0.',
      conversion_ci_low: 'Lower bound of the Wilson 95% interval of conversion; null when total is 0.',
      conversion_ci_high: 'Upper bound of the Wilson 95% interval of conversion; null when total is 0.',
      control_variant: 'Label of the control variant of the test; null when the test has none.',
      control_conversion: "The control variant's conversion; null without a control or when its total is 0.",
      absolute_lift:
        "conversion minus the control's conversion (a difference of proportions: 0.02 = 2 percentage points). Null for the control row and when undefined.",
      relative_lift:
        "absolute_lift / the control's conversion (0.1 = 10% better than control). Null also when the control converts 0%.",
      lift_ci_low: 'Lower bound of the 95% interval of absolute_lift (unpooled normal approximation).',
      lift_ci_high: 'Upper bound of the 95% interval of absolute_lift (unpooled normal approximation).',
      z_score: 'Two-proportion z statistic against the control (pooled standard error).',
      p_value:
        'Two-sided p-value of the two-proportion z-test against the control; below 0.05 means significant at the 5% level. Normal approximation: trust it when each group has at least about 10 completions and 10 non-completions.',
      last_seen_at: 'When a run last fetched this result.',
      last_changed_at: 'When complete or total last changed.',
      removed_at: 'Set when the variant or its test is no longer listed by the service; null while listed.',
    },
  };
}

const DESCRIPTIONS: Record<string, Described> = {
  sources: {
    kind: 'table',
    comment:
      "One row per configured source: a Website Insights account read through one base URL. Every other table's source_id refers here.",
    columns: {
      source_id: 'Name of the source, as configured (INSIGHTS_SOURCE_NAME, or a name in the config file).',
      base_url: 'Base URL of the source API (spec: {base_url}). The API key is never stored.',
      first_seen_at: 'When insights-sync first loaded anything for this source.',
    },
  },
  ab_tests: testsTable('/v1/abtesting', 'A/B tests'),
  personalization_tests: testsTable('/v1/personalization', 'Website personalization tests'),
  test_results: {
    kind: 'table',
    comment:
      'Current per-variant results of every A/B and personalization test (spec 2.2, GET /v1/<kind>/detail/:id), refreshed on every run. Day by day: test_result_history. With statistics: the views ab_test_results and personalization_results.',
    columns: {
      source_id: SOURCE_ID,
      test_kind: "'abtesting' (test_id is an ab_tests.id) or 'personalization' (a personalization_tests.id).",
      test_id: 'Identifier of the test.',
      variant:
        "Variant label (spec 2.2). The spec says a control variant and numbered variants are used; the views take the variant named 'control' (any case) as the control.",
      complete: `Count named complete (spec 2.2); its meaning is ${NOT_DOCUMENTED}. The views assume goal completions.`,
      total: `Count named total (spec 2.2); its meaning is ${NOT_DOCUMENTED}. The views assume visitors who saw the variant.`,
      raw: RAW,
      first_seen_at: FIRST_SEEN,
      last_seen_at: 'When a run last fetched this result.',
      last_changed_at: LAST_CHANGED,
      removed_at:
        'Set when the variant is no longer in its test results, or the test is no longer listed; null while listed.',
    },
  },
  test_result_history: {
    kind: 'table',
    comment:
      'One row per test, variant and UTC day on which a run fetched the results: the last values fetched that day. Days without a run have no row. Increments per day: the view test_result_daily.',
    columns: {
      source_id: SOURCE_ID,
      test_kind: "'abtesting' or 'personalization'.",
      test_id: 'Identifier of the test.',
      variant: 'Variant label (spec 2.2).',
      day: 'UTC day of the run that fetched the values (not a day of visitor activity).',
      complete: `complete as fetched that day (spec 2.2; whether the service counts it since the start of the test is ${NOT_DOCUMENTED}).`,
      total: `total as fetched that day (spec 2.2; whether the service counts it since the start of the test is ${NOT_DOCUMENTED}).`,
      captured_at:
        'When the values of this row were last written (a later run on the same day overwrites them).',
    },
  },
  visitors: {
    kind: 'table',
    comment:
      'Visitors (spec 2.6), taken from the visitor object inside feedback items, survey answers and webhook bodies. One row per source and visitor id; the latest copy from the API wins.',
    columns: {
      source_id: SOURCE_ID,
      id: 'Visitor identifier (spec 2.6). feedback.visitor_id and survey_answers.visitor_id refer to it.',
      name: 'Name of the visitor (spec 2.6).',
      company: 'Company of the visitor (spec 2.6); may be empty.',
      email: 'Email address of the visitor (spec 2.6).',
      ip: 'IP address of the visitor (spec 2.6).',
      user_agent: 'User agent of the visitor (spec 2.6).',
      landing_page: `Landing page of the visitor (spec 2.6); which visit it belongs to is ${NOT_DOCUMENTED}.`,
      ref_page: 'Referring page, the referrer (spec 2.6); may be empty.',
      created_at: `created_at of the visitor (spec 2.6); presumably when the service first saw the visitor, ${NOT_DOCUMENTED}.`,
      device: `Device type (spec 2.6); the allowed values are ${NOT_DOCUMENTED}.`,
      browser: `Browser (spec 2.6); the allowed values are ${NOT_DOCUMENTED}.`,
      os: `Operating system (spec 2.6); the allowed values are ${NOT_DOCUMENTED}.`,
      raw: 'The visitor object as last received (JSON).',
      first_seen_at: FIRST_SEEN,
      last_changed_at: LAST_CHANGED,
    },
  },
  feedback: {
    kind: 'table',
    comment:
      'Visitor feedback (spec 2.3, GET /v1/feedback), loaded one UTC day at a time; plus provisional rows from the feedback webhook (spec 6) until the API delivers them (see origin).',
    columns: {
      source_id: SOURCE_ID,
      id: 'Feedback item id (spec 2.3). Key with source_id and feedback_id: the same id can come with different feedback_id values.',
      feedback_id: `feedback_id (spec 2.3); its meaning is ${NOT_DOCUMENTED} (it appears to identify the feedback form).`,
      question: 'Question text shown to the visitor (spec 2.3).',
      session: 'Session identifier (spec 2.3).',
      comment: 'The visitor comment (spec 2.3); may be empty.',
      rating: `Numeric rating (spec 2.3); its scale is ${NOT_DOCUMENTED} and may differ between questions. Null on provisional webhook rows.`,
      rating_text: `Text label of the rating (spec 2.3); the allowed values are ${NOT_DOCUMENTED}. Null on provisional webhook rows.`,
      dt: 'When the feedback was given (spec 2.3). Null on provisional webhook rows (the webhook carries no time).',
      url: 'Page address where the feedback was given (spec 2.3). Null on provisional webhook rows.',
      screenshot: 'Address of a screenshot image (spec 2.3).',
      visitor_id: VISITOR_ID,
      raw: `${RAW} For a provisional row, the webhook body.`,
      first_seen_at: FIRST_SEEN,
      last_changed_at: LAST_CHANGED,
      origin: ORIGIN,
    },
  },
  survey_answers: {
    kind: 'table',
    comment:
      'Survey answers (spec 2.4, GET /v1/survey), one row per response and question, loaded one UTC day at a time; plus provisional rows from the survey webhook (spec 6) until the API delivers them (see origin).',
    columns: {
      source_id: SOURCE_ID,
      id: 'Survey response id (spec 2.4 id), shared by the answers of one response. Key with source_id and question_id.',
      question_id: 'Identifier of the question (spec 2.4).',
      question: 'Question text (spec 2.4).',
      session: 'Session identifier (spec 2.4).',
      comment: "The visitor's answer (spec 2.4 comment; the survey webhook calls it answer); may be empty.",
      dt: 'When the answer was given (spec 2.4). Null on provisional webhook rows.',
      url: 'Page address where it was given (spec 2.4). Null on provisional webhook rows.',
      visitor_id: VISITOR_ID,
      raw: `${RAW} For a provisional row, the webhook body.`,
      first_seen_at: FIRST_SEEN,
      last_changed_at: LAST_CHANGED,
      origin: ORIGIN,
    },
  },
  recordings: {
    kind: 'table',
    comment: 'Session recordings (spec 2.5, GET /v1/recordings), loaded one UTC day at a time.',
    columns: {
      source_id: SOURCE_ID,
      id: 'Recording identifier (spec 2.5). Key with source_id.',
      duration: `Length of the recording (spec 2.5); the unit is ${NOT_DOCUMENTED}.`,
      landing_page: 'Landing page of the recorded visit (spec 2.5).',
      referral: 'Referring address (spec 2.5); may be empty.',
      country: 'Country of the visitor (spec 2.5).',
      city: 'City of the visitor (spec 2.5).',
      user_ip: 'IP address of the visitor (spec 2.5).',
      user_agent: 'User agent of the visitor (spec 2.5).',
      dt: `When the recording was made (spec 2.5); whether start or end is ${NOT_DOCUMENTED}.`,
      video_link: 'Address of the recording player (spec 2.5).',
      raw: RAW,
      first_seen_at: FIRST_SEEN,
      last_changed_at: LAST_CHANGED,
    },
  },
  heatmaps: {
    kind: 'table',
    comment:
      'Heatmaps (spec 2.7, GET /v1/heatmaps), read whole on every run. A heatmap the service no longer lists keeps its row, with removed_at set.',
    columns: {
      source_id: SOURCE_ID,
      id: 'Heatmap identifier (spec 2.7). Key with source_id.',
      name: 'Name of the heatmap (spec 2.7).',
      url: 'Page address (spec 2.7).',
      rule: `Rule of the heatmap (spec 2.7); the allowed values are ${NOT_DOCUMENTED}.`,
      start_time: 'Start of the heatmap (spec 2.7).',
      end_time: 'End of the heatmap (spec 2.7); null when no end is set.',
      heatmap_limit: `heatmap_limit (spec 2.7); its meaning is ${NOT_DOCUMENTED}.`,
      created_at: 'When the heatmap was created, as the service reports it (spec 2.7).',
      updated_at: 'When the heatmap was last updated, as the service reports it (spec 2.7).',
      raw: RAW,
      first_seen_at: FIRST_SEEN,
      last_seen_at: LAST_SEEN,
      last_changed_at: LAST_CHANGED,
      removed_at: REMOVED,
    },
  },
  sync_runs: {
    kind: 'table',
    comment: 'The run log: one row per sync, backfill or scheduled run of insights-sync, however it ended.',
    columns: {
      run_id: 'Run number, increasing.',
      trigger: "What started the run: 'sync', 'backfill' or 'schedule'.",
      status:
        "'running'; 'ok' (everything loaded); 'partial' (some day windows or snapshots failed, the rest loaded); 'failed' (nothing loaded, e.g. a rejected API key); 'interrupted' (stopped by a signal or a crash).",
      started_at: 'When the run started.',
      finished_at: 'When the run ended; null while running.',
      from_day: 'First day of a backfill range; null for a sync (which plans its own days).',
      to_day: 'Last day of a backfill range; null for a sync.',
      summary:
        'Per source and resource: windows, failed and skipped windows, truncated days, items fetched, inserted, updated, unchanged, rejected and removed, and the first errors (JSON).',
      error: 'Why the run failed or was interrupted.',
    },
  },
  sync_windows: {
    kind: 'table',
    comment:
      'The ledger: one row per source, day-windowed resource (feedback, survey, recordings) and UTC day that a run has fetched.',
    columns: {
      source_id: SOURCE_ID,
      resource: "'feedback', 'survey' or 'recordings'.",
      day: 'The UTC day (startdate = enddate = day, spec 4).',
      status:
        "'done' (a closed day, loaded); 'open' (today: loaded, fetched again by the next run); 'failed' (the last attempt failed, see last_error; the next run tries again).",
      item_count: 'Items the API returned for the day at the last fetch.',
      requested_limit: 'The limit parameter of the last request for the day.',
      truncated:
        'True when the API returned as many items as it allows in one response: items of that day may be missing, and the API offers no paging.',
      rejected_count: 'Items of the day that failed validation (see rejects).',
      attempts: 'How many times the day was fetched.',
      last_error: 'Error of the last failed attempt; null once it succeeds.',
      fetched_at: 'When the day was last fetched.',
      run_id: 'The run that last fetched the day (sync_runs.run_id).',
    },
  },
  watermarks: {
    kind: 'table',
    comment:
      'Per source and day-windowed resource: the day through which every day since start_day is loaded. Moves only forward (a trigger enforces it).',
    columns: {
      source_id: SOURCE_ID,
      resource: "'feedback', 'survey' or 'recordings'.",
      start_day:
        'First day loaded for this resource (INSIGHTS_START_DATE at the first sync, or an earlier backfill).',
      day: 'The watermark: every day from start_day through this one is done. Null until the first day is.',
      updated_at: 'When the watermark last moved.',
    },
  },
  rejects: {
    kind: 'table',
    comment:
      'Items the API returned that failed validation, verbatim, once each per source, resource and content. A whole day fails only when too many of its items are bad.',
    columns: {
      source_id: SOURCE_ID,
      resource:
        "Where the item came from: 'feedback', 'survey', 'recordings', 'abtesting', 'personalization', 'heatmaps', or '<kind>/detail' for test results.",
      item_hash: "md5 of the item's canonical JSON: the same bad item seen again stays one row.",
      day: 'UTC day window the item came from; null for resources read whole.',
      item: 'The item as received (JSON).',
      error: 'What is wrong with the item.',
      first_seen_at: 'When the item was first rejected.',
      run_id: 'The run that first rejected it (sync_runs.run_id).',
    },
  },
  webhook_events: {
    kind: 'table',
    comment:
      'Every webhook delivery the receiver accepted (spec 6), once per source and distinct body: applied to feedback or survey_answers, or rejected and kept for inspection.',
    columns: {
      id: 'Event number, increasing.',
      source_id: SOURCE_ID,
      body_hash:
        "sha256 of the body's canonical JSON (keys sorted): a redelivery of the same body is the same row.",
      type: "The body's type field as sent ('feedback' or 'survey' when valid); null when it has none.",
      status: "'applied' (merged into feedback or survey_answers) or 'rejected' (see error).",
      error: 'Why the body was rejected; null when applied.',
      body: 'The body (JSON); null when it is kept in body_text instead.',
      body_text:
        'The body as JSON text, when PostgreSQL cannot hold it as jsonb (a \\u0000 or an unpaired surrogate in a string); null otherwise.',
      received_at: 'When the body was first delivered.',
      last_received_at: 'When the body was last delivered.',
      delivery_count: 'How many times this body was delivered.',
      applied_at: 'When the body was merged into feedback or survey_answers; null when rejected.',
    },
  },
  kysely_migration: {
    kind: 'table',
    comment: 'Bookkeeping of the schema migrator: the migrations applied to this schema.',
    columns: {
      name: 'Name of the migration (migrations/<name>.ts).',
      timestamp: 'When it was applied (ISO 8601 text).',
    },
  },
  kysely_migration_lock: {
    kind: 'table',
    comment: 'Bookkeeping of the schema migrator: one row, locked while migrations run.',
    columns: {
      id: 'The lock name.',
      is_locked: '1 while a migration runs.',
    },
  },
  ab_test_results: resultsView('A/B test', 'abtesting', 'ab_tests'),
  personalization_results: resultsView('personalization test', 'personalization', 'personalization_tests'),
  test_result_daily: {
    kind: 'view',
    comment: `For trend charts: per test, variant and UTC day with a snapshot (test_result_history), complete and total as fetched that day, and the increments since the previous snapshot. ${STAT_ASSUMPTION}`,
    columns: {
      source_id: SOURCE_ID,
      test_kind: "'abtesting' or 'personalization'.",
      test_id: 'Identifier of the test.',
      test_name: 'Name of the test; null if the test list never named it.',
      variant: 'Variant label.',
      is_control: "True for the control variant (named 'control', any case).",
      day: 'UTC day of the snapshot.',
      complete: 'complete as fetched that day.',
      total: 'total as fetched that day.',
      conversion: 'complete / total that day (0..1); null when total is 0.',
      previous_day:
        'Day of the previous snapshot of this variant; the increments cover the days after it through day. Null on the first.',
      complete_increment:
        'complete minus the previous snapshot; null on the first. Negative if the service lowered its count.',
      total_increment: 'total minus the previous snapshot; null on the first.',
      captured_at: 'When the values of that day were last written.',
    },
  },
  feedback_enriched: {
    kind: 'view',
    comment:
      'Each feedback row with its visitor (device, browser, os, landing page, referrer) and its UTC day, for grouping. Provisional webhook rows have no dt and no day.',
    columns: {
      source_id: SOURCE_ID,
      id: 'Feedback item id (feedback.id).',
      feedback_id: 'feedback.feedback_id.',
      question: 'Question text shown to the visitor.',
      session: 'Session identifier.',
      comment: 'The visitor comment; may be empty.',
      rating: 'Numeric rating; scale not documented by the service, may differ between questions.',
      rating_text: 'Text label of the rating.',
      dt: 'When the feedback was given.',
      day: 'UTC day of dt; filter on it to use the day index.',
      url: 'Page address where the feedback was given.',
      screenshot: 'Address of a screenshot image.',
      origin: ORIGIN,
      visitor_id: 'Id of the visitor.',
      device: 'Device of the visitor (visitors.device).',
      browser: 'Browser of the visitor (visitors.browser).',
      os: 'Operating system of the visitor (visitors.os).',
      landing_page: 'Landing page of the visitor (visitors.landing_page).',
      ref_page: 'Referrer of the visitor (visitors.ref_page); may be empty.',
    },
  },
  survey_answers_enriched: {
    kind: 'view',
    comment:
      'Each survey answer with its visitor (device, browser, os, landing page, referrer) and its UTC day, for grouping. Provisional webhook rows have no dt and no day.',
    columns: {
      source_id: SOURCE_ID,
      id: 'Survey response id (survey_answers.id), shared by the answers of one response.',
      question_id: 'Identifier of the question.',
      question: 'Question text.',
      answer: "The visitor's answer (survey_answers.comment); may be empty.",
      session: 'Session identifier.',
      dt: 'When the answer was given.',
      day: 'UTC day of dt; filter on it to use the day index.',
      url: 'Page address where it was given.',
      origin: ORIGIN,
      visitor_id: 'Id of the visitor.',
      device: 'Device of the visitor (visitors.device).',
      browser: 'Browser of the visitor (visitors.browser).',
      os: 'Operating system of the visitor (visitors.os).',
      landing_page: 'Landing page of the visitor (visitors.landing_page).',
      ref_page: 'Referrer of the visitor (visitors.ref_page); may be empty.',
    },
  },
  daily_activity: {
    kind: 'view',
    comment:
      'Per source and UTC day: feedback, survey answers and recordings, counted by their dt. A day without any has no row. Provisional webhook rows (no dt yet) are not counted.',
    columns: {
      source_id: SOURCE_ID,
      day: 'UTC day.',
      feedback_count: 'Feedback items given that day.',
      average_rating:
        'Average rating of that day; mixes questions, whose scales may differ: for one question, group feedback_enriched by question.',
      survey_answer_count: 'Survey answers given that day (one per response and question).',
      survey_response_count: 'Survey responses given that day (distinct survey_answers.id).',
      recording_count: 'Recordings made that day.',
      average_recording_duration: `Average recording duration that day (unit ${NOT_DOCUMENTED}).`,
    },
  },
  sync_health: {
    kind: 'view',
    comment:
      'Per source and resource, what `insights-sync status` shows: watermark and lag of the day-windowed resources, truncated and failed days, rejected items, and the last run that loaded the resource.',
    columns: {
      source_id: SOURCE_ID,
      resource:
        'feedback, survey, recordings (read a day at a time), abtesting, personalization, heatmaps (read whole).',
      kind: "'windowed' (read one UTC day at a time, with a watermark) or 'snapshot' (read whole on every run).",
      start_day: 'First day loaded (windowed resources); null otherwise.',
      watermark:
        'Every day from start_day through this one is loaded; null for snapshot resources or before the first day.',
      lag_days:
        'Days between the watermark and yesterday (UTC), the last day that can be complete; 0 is up to date. Null without a watermark.',
      truncated_days:
        'Days the API returned as many items as it allows in one response: items may be missing.',
      last_truncated_day: 'The latest truncated day; null when none.',
      failed_days: 'Days whose last fetch failed (the next run tries again).',
      rejected_items: 'Items that failed validation (rows of rejects).',
      last_loaded_at: 'When a run last fetched this resource.',
      last_run_id: 'The last finished run that included this resource (sync_runs.run_id).',
      last_run_status: "Status of that run: 'ok', 'partial', 'failed' or 'interrupted'.",
      last_run_started_at: 'When that run started.',
      last_run_finished_at: 'When that run ended.',
    },
  },
};

async function commentEverything(db: AnyDb): Promise<void> {
  for (const [name, described] of Object.entries(DESCRIPTIONS)) {
    // The migrator's own tables are where the migrator put them: commented only when they are here.
    if (name.startsWith('kysely_migration')) {
      const found = await sql<{ ok: boolean }>`select to_regclass(${name}) is not null as ok`.execute(db);
      if (found.rows[0]?.ok !== true) continue;
    }
    const kind = described.kind === 'view' ? sql`view` : sql`table`;
    await sql`comment on ${kind} ${sql.table(name)} is ${sql.lit(described.comment)}`.execute(db);
    for (const [column, comment] of Object.entries(described.columns)) {
      await sql`comment on column ${sql.ref(`${name}.${column}`)} is ${sql.lit(comment)}`.execute(db);
    }
  }
}
