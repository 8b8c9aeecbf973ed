import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadReportData } from '../../src/report/report-data.js';
import type { GroundTruth, Simulator } from '../../src/simulator/server.js';
import { statusReport } from '../../src/status/status-report.js';
import { todayUtc } from '../../src/time/days.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { fillReportWarehouse } from '../report/report-warehouse.js';
import { exampleQueries } from './warehouse-doc.js';

/**
 * The analyst views over a warehouse that three weeks of syncs against the simulator filled, held
 * against the simulator's ground truth and against the tables they read; and every example query
 * of docs/warehouse.md, run as written.
 */
describe('the analyst views', () => {
  let t: TestDatabase;
  let sim: Simulator;
  let truth: GroundTruth;
  let range: { from: string; to: string };

  beforeAll(async () => {
    t = await createTestDatabase();
    const filled = await fillReportWarehouse(t);
    sim = filled.sim;
    range = { from: filled.from, to: filled.to };
    truth = sim.truth();
  }, 120_000);
  afterAll(async () => {
    await sim?.stop();
    await t?.drop();
  });

  it('daily_activity counts per UTC day what the service holds', async () => {
    const rows = await t.db.selectFrom('daily_activity').selectAll().orderBy('day').execute();
    const perDay = new Map<
      string,
      { feedback: number; ratings: number[]; survey: number; responses: Set<number>; recordings: number[] }
    >();
    const of = (dt: string) => {
      const day = dt.slice(0, 10);
      const entry = perDay.get(day) ?? {
        feedback: 0,
        ratings: [],
        survey: 0,
        responses: new Set<number>(),
        recordings: [],
      };
      perDay.set(day, entry);
      return entry;
    };
    for (const f of truth.feedback) {
      of(f.dt).feedback++;
      if (typeof f.rating === 'number') of(f.dt).ratings.push(f.rating);
    }
    for (const s of truth.survey) {
      of(s.dt).survey++;
      of(s.dt).responses.add(s.id);
    }
    for (const r of truth.recordings) of(r.dt).recordings.push(r.duration);
    expect(rows.map((r) => r.day)).toEqual([...perDay.keys()].sort());
    for (const row of rows) {
      const day = perDay.get(row.day ?? '');
      const durations = day?.recordings ?? [];
      expect(row, row.day ?? '').toMatchObject({
        source_id: 'main',
        feedback_count: day?.feedback,
        survey_answer_count: day?.survey,
        survey_response_count: day?.responses.size,
        recording_count: durations.length,
        // Exact sums and counts: a week's average is sum(rating_sum) / sum(rating_count).
        rating_sum: day?.ratings.reduce((a, b) => a + b, 0),
        rating_count: day?.ratings.length,
      });
      if (durations.length > 0)
        expect(row.average_recording_duration).toBeCloseTo(
          durations.reduce((a, b) => a + b, 0) / durations.length,
          9,
        );
    }
  });

  it('feedback_enriched and survey_answers_enriched are the rows of their table, each with its visitor and UTC day', async () => {
    for (const [view, table] of [
      ['feedback_enriched', 'feedback'],
      ['survey_answers_enriched', 'survey_answers'],
    ] as const) {
      const counts = await sql<{ view: number; table: number; wrong: number }>`
        select (select count(*)::int from ${sql.table(view)}) as view,
               (select count(*)::int from ${sql.table(table)}) as table,
               (select count(*)::int from ${sql.table(view)} e join visitors v on v.source_id = e.source_id and v.id = e.visitor_id
                 where e.device is distinct from v.device or e.browser is distinct from v.browser
                    or e.os is distinct from v.os or e.landing_page is distinct from v.landing_page
                    or e.ref_page is distinct from v.ref_page or e.day <> substr(e.dt::text, 1, 10)::date
                    or e.visitor_id is null) as wrong`.execute(t.db);
      expect(counts.rows[0], view).toEqual({
        view: counts.rows[0]?.table,
        table: expect.any(Number),
        wrong: 0,
      });
      expect(counts.rows[0]?.table).toBeGreaterThan(100);
    }
    // The UTC day, whatever the session's time zone.
    await sql`set timezone = 'Pacific/Kiritimati'`.execute(t.db);
    try {
      const late = await sql<{ n: number }>`
        select count(*)::int as n from feedback_enriched
        where day <> (dt at time zone 'UTC')::date or day::text <> substr((dt at time zone 'UTC')::text, 1, 10)`.execute(
        t.db,
      );
      expect(late.rows[0]?.n).toBe(0);
    } finally {
      await sql`reset timezone`.execute(t.db);
    }
    const answers = await t.db
      .selectFrom('survey_answers_enriched as e')
      .innerJoin('survey_answers as s', (j) =>
        j
          .onRef('s.source_id', '=', 'e.source_id')
          .onRef('s.id', '=', 'e.id')
          .onRef('s.question_id', '=', 'e.question_id'),
      )
      .select(sql<number>`count(*) filter (where e.answer is distinct from s.comment)::int`.as('different'))
      .executeTakeFirstOrThrow();
    expect(answers.different).toBe(0);
  });

  it('test_result_daily has a row per day with a snapshot, and the increments since the one before', async () => {
    const rows = await t.db
      .selectFrom('test_result_daily')
      .selectAll()
      .orderBy('test_kind')
      .orderBy('test_id')
      .orderBy('variant')
      .orderBy('day')
      .execute();
    const history = await t.db
      .selectFrom('test_result_history')
      .select(sql<number>`count(*)::int`.as('n'))
      .executeTakeFirstOrThrow();
    expect(rows).toHaveLength(history.n);
    let grew = 0;
    for (const [i, row] of rows.entries()) {
      const before = rows[i - 1];
      const same =
        before &&
        before.test_id === row.test_id &&
        before.variant === row.variant &&
        before.test_kind === row.test_kind;
      if (!same) {
        expect(row).toMatchObject({ previous_day: null, complete_increment: null, total_increment: null });
        continue;
      }
      expect(row.previous_day).toBe(before.day);
      expect(row.complete_increment).toBe((row.complete ?? 0) - (before.complete ?? 0));
      expect(row.total_increment).toBe((row.total ?? 0) - (before.total ?? 0));
      if ((row.total_increment ?? 0) > 0) grew++;
    }
    // advance() grew the results between the daily syncs.
    expect(grew).toBeGreaterThan(0);
    expect(rows.every((r) => r.test_name !== null && r.is_control === (r.variant === 'control'))).toBe(true);
  });

  it('ab_test_results and personalization_results hold the latest results of every variant, with the test', async () => {
    for (const [view, kind, tests] of [
      ['ab_test_results', 'abtesting', truth.abTests],
      ['personalization_results', 'personalization', truth.personalizationTests],
    ] as const) {
      const rows = await t.db.selectFrom(view).selectAll().orderBy('test_id').orderBy('variant').execute();
      const expected = Object.entries(truth.results[kind]).flatMap(([testId, variants]) =>
        variants.map((v) => ({
          test_id: testId,
          test_name: tests.find((x) => x.id === testId)?.test_name,
          variant: v.variant,
          complete: v.complete,
          total: v.total,
          conversion: v.complete / v.total,
        })),
      );
      expect(rows).toHaveLength(expected.length);
      expect(rows).toEqual(expect.arrayContaining(expected.map((e) => expect.objectContaining(e))));
      expect(
        rows.filter((r) => !r.is_control).every((r) => r.p_value !== null && r.control_variant === 'control'),
      ).toBe(true);
    }
  });

  it('sync_health shows what `insights-sync status` shows', async () => {
    const health = await t.db.selectFrom('sync_health').selectAll().execute();
    const status = await statusReport(t.db, todayUtc(new Date()));
    expect(health.map((h) => h.resource)).toEqual(status.resources.map((r) => r.resource));
    for (const r of status.resources) {
      const h = health.find((x) => x.resource === r.resource);
      expect(h, r.resource).toMatchObject({
        source_id: r.source,
        watermark: r.watermark,
        lag_days: r.lagDays,
        truncated_days: r.truncatedDays.length,
        failed_days: r.failedWindows.length,
        rejected_items: r.rejectedItems,
        last_run_status: 'ok',
      });
      expect(h?.last_loaded_at).toBeInstanceOf(Date);
    }
    expect(health.find((h) => h.resource === 'feedback')).toMatchObject({ kind: 'windowed', lag_days: 0 });
    expect(health.find((h) => h.resource === 'heatmaps')).toMatchObject({
      kind: 'snapshot',
      watermark: null,
    });
  });

  it('the report shows the numbers of the views', async () => {
    const data = await loadReportData(t.db, { ...range, source: 'main' });
    const counts = await sql<{ feedback: number; survey: number; recordings: number }>`
      select (select count(*)::int from feedback where dt is not null) as feedback,
             (select count(*)::int from survey_answers where dt is not null) as survey,
             (select count(*)::int from recordings) as recordings`.execute(t.db);
    expect(data.totals).toEqual({
      feedback: counts.rows[0]?.feedback,
      surveyAnswers: counts.rows[0]?.survey,
      recordings: counts.rows[0]?.recordings,
      tests: truth.abTests.length + truth.personalizationTests.length,
    });
    expect(data.durationDays.reduce((n, b) => n + b.count, 0)).toBe(counts.rows[0]?.recordings);
    expect(data.survey.reduce((n, q) => n + q.total, 0)).toBe(counts.rows[0]?.survey);
    expect(data.health).toHaveLength(6);
  });

  it('runs every example query of docs/warehouse.md, and each finds what it looks for', async () => {
    const examples = exampleQueries();
    expect(examples.length).toBeGreaterThanOrEqual(10);
    expect(examples.map((e) => e.number)).toEqual(examples.map((_, i) => i + 1));
    // One row that only a webhook has delivered so far, for the example that lists them.
    await sql`insert into feedback (source_id, id, feedback_id, question, comment, visitor_id, raw, origin)
              values ('main', 1, 101, 'How would you rate this page?', 'from a webhook', 'v0001-b64265', '{}', 'webhook')`.execute(
      t.db,
    );
    try {
      const found: Record<number, number> = {};
      for (const example of examples) {
        const result = await sql.raw(example.sql).execute(t.db);
        found[example.number] = result.rows.length;
      }
      // Example 14 lists what needs attention in the loads: nothing, in this warehouse.
      const expected = Object.fromEntries(
        examples.map((e) => [e.number, e.number === 14 ? 0 : expect.any(Number)]),
      );
      expect(found).toEqual(expected);
      const empty = examples
        .filter((e) => e.number !== 14 && found[e.number] === 0)
        .map((e) => `${e.number}. ${e.title}`);
      expect(empty).toEqual([]);
    } finally {
      await sql`delete from feedback where origin = 'webhook' and id = 1`.execute(t.db);
    }
  });
});
