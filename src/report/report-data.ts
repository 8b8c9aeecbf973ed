import { type Kysely, sql } from 'kysely';
import type { Database } from '../db/database.js';
import type { DayString } from '../time/days.js';

/**
 * What the report shows, read from the analyst views (migration 0004): the same numbers an
 * analyst gets from SQL. Plain JSON-able data; render-html.ts turns it into the page.
 */
export interface ReportOptions {
  /** Only this source; all sources when undefined. */
  source?: string;
  /** UTC days, both included: the range of the daily charts. */
  from: DayString;
  to: DayString;
}

export interface VariantResult {
  source: string;
  testId: string;
  testName: string;
  url: string | null;
  variant: string;
  isControl: boolean;
  complete: number;
  total: number;
  conversion: number | null;
  conversionLow: number | null;
  conversionHigh: number | null;
  absoluteLift: number | null;
  relativeLift: number | null;
  liftLow: number | null;
  liftHigh: number | null;
  pValue: number | null;
}

export interface TestDay {
  source: string;
  testKind: 'abtesting' | 'personalization';
  testId: string;
  testName: string;
  variant: string;
  day: DayString;
  complete: number;
  total: number;
  conversion: number | null;
  completeIncrement: number | null;
  totalIncrement: number | null;
}

export interface ActivityDay {
  day: DayString;
  feedback: number;
  surveyAnswers: number;
  recordings: number;
  averageDuration: number | null;
}

export interface RatingDay {
  day: DayString;
  question: string;
  feedback: number;
  averageRating: number | null;
}

export interface SurveyQuestion {
  questionId: number;
  question: string;
  answers: { answer: string; count: number }[];
  total: number;
}

export interface DurationBin {
  label: string;
  count: number;
}

export interface HealthRow {
  source: string;
  resource: string;
  kind: string;
  watermark: string | null;
  lagDays: number | null;
  truncatedDays: number;
  lastTruncatedDay: string | null;
  failedDays: number;
  rejectedItems: number;
  lastLoadedAt: string | null;
  lastRunStatus: string | null;
  lastRunFinishedAt: string | null;
}

export interface ReportData {
  generatedAt: string;
  sources: string[];
  range: { from: DayString; to: DayString };
  totals: { feedback: number; surveyAnswers: number; recordings: number; tests: number };
  abResults: VariantResult[];
  personalizationResults: VariantResult[];
  testDays: TestDay[];
  activity: ActivityDay[];
  ratings: RatingDay[];
  survey: SurveyQuestion[];
  durations: DurationBin[];
  health: HealthRow[];
}

/** Most answers shown per question; the rest are summed up as "other answers". */
const ANSWERS_PER_QUESTION = 8;
/** Questions charted, the most answered first. */
const QUESTIONS_SHOWN = 12;
/** Edges of the duration histogram, in the service's unit (which the spec does not name). */
const DURATION_EDGES = [0, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600];

export async function loadReportData(
  db: Kysely<Database>,
  options: ReportOptions,
  now: Date = new Date(),
): Promise<ReportData> {
  const { source, from, to } = options;
  const sources = (await db.selectFrom('sources').select('source_id').orderBy('source_id').execute())
    .map((s) => s.source_id)
    .filter((s) => source === undefined || s === source);

  const results = async (view: 'ab_test_results' | 'personalization_results') =>
    (
      await db
        .selectFrom(view)
        .selectAll()
        .where('removed_at', 'is', null)
        .$call((q) => (source === undefined ? q : q.where('source_id', '=', source)))
        .orderBy('source_id')
        .orderBy('test_name')
        .orderBy('test_id')
        .orderBy('is_control', 'desc')
        .orderBy('variant')
        .execute()
    ).map(
      (r): VariantResult => ({
        source: r.source_id ?? '',
        testId: r.test_id ?? '',
        testName: r.test_name ?? r.test_id ?? '',
        url: r.url,
        variant: r.variant ?? '',
        isControl: r.is_control === true,
        complete: r.complete ?? 0,
        total: r.total ?? 0,
        conversion: r.conversion,
        conversionLow: r.conversion_ci_low,
        conversionHigh: r.conversion_ci_high,
        absoluteLift: r.absolute_lift,
        relativeLift: r.relative_lift,
        liftLow: r.lift_ci_low,
        liftHigh: r.lift_ci_high,
        pValue: r.p_value,
      }),
    );

  const testDays = (
    await db
      .selectFrom('test_result_daily')
      .selectAll()
      .where('day', '>=', from)
      .where('day', '<=', to)
      .$call((q) => (source === undefined ? q : q.where('source_id', '=', source)))
      .orderBy('test_kind')
      .orderBy('test_name')
      .orderBy('test_id')
      .orderBy('day')
      .orderBy('variant')
      .execute()
  ).map(
    (r): TestDay => ({
      source: r.source_id ?? '',
      testKind: r.test_kind ?? 'abtesting',
      testId: r.test_id ?? '',
      testName: r.test_name ?? r.test_id ?? '',
      variant: r.variant ?? '',
      day: r.day ?? '',
      complete: r.complete ?? 0,
      total: r.total ?? 0,
      conversion: r.conversion,
      completeIncrement: r.complete_increment,
      totalIncrement: r.total_increment,
    }),
  );

  // Summed over the selected sources: one row per day.
  const activity = await db
    .selectFrom('daily_activity')
    .select([
      'day',
      sql<number>`sum(feedback_count)::int`.as('feedback'),
      sql<number>`sum(survey_answer_count)::int`.as('survey_answers'),
      sql<number>`sum(recording_count)::int`.as('recordings'),
      // Every recording has a duration: weighting each source's average by its count is exact.
      sql<
        number | null
      >`sum(average_recording_duration * recording_count) / nullif(sum(recording_count), 0)`.as(
        'average_duration',
      ),
    ])
    .where('day', '>=', from)
    .where('day', '<=', to)
    .$call((q) => (source === undefined ? q : q.where('source_id', '=', source)))
    .groupBy('day')
    .orderBy('day')
    .execute();

  // Ratings per question: the scales may differ between questions, so they are not averaged together.
  const ratings = await db
    .selectFrom('feedback_enriched')
    .select([
      'day',
      'question',
      sql<number>`count(*)::int`.as('feedback'),
      sql<number | null>`avg(rating)::float8`.as('average_rating'),
    ])
    .where('day', '>=', from)
    .where('day', '<=', to)
    .$call((q) => (source === undefined ? q : q.where('source_id', '=', source)))
    .groupBy(['day', 'question'])
    .orderBy('question')
    .orderBy('day')
    .execute();

  const answers = await db
    .selectFrom('survey_answers_enriched')
    .select(['question_id', 'question', 'answer', sql<number>`count(*)::int`.as('n')])
    .where('day', '>=', from)
    .where('day', '<=', to)
    .$call((q) => (source === undefined ? q : q.where('source_id', '=', source)))
    .groupBy(['question_id', 'question', 'answer'])
    .orderBy('question_id')
    .orderBy(sql`count(*)`, 'desc')
    .orderBy('answer')
    .execute();

  const edges = sql.raw(`array[${DURATION_EDGES.join(', ')}]`);
  const durations = await sql<{ bucket: number; n: number }>`
    select width_bucket(duration, ${edges}) as bucket, count(*)::int as n
    from recordings
    where ${sql.raw(`(dt at time zone 'UTC')::date`)} between ${from}::date and ${to}::date
      ${source === undefined ? sql`` : sql`and source_id = ${source}`}
    group by bucket order by bucket`.execute(db);

  const health = await db
    .selectFrom('sync_health')
    .selectAll()
    .$call((q) => (source === undefined ? q : q.where('source_id', '=', source)))
    .execute();

  const activityDays = activity.map(
    (a): ActivityDay => ({
      day: a.day ?? '',
      feedback: a.feedback,
      surveyAnswers: a.survey_answers,
      recordings: a.recordings,
      averageDuration: a.average_duration,
    }),
  );
  const abResults = await results('ab_test_results');
  const personalizationResults = await results('personalization_results');
  return {
    generatedAt: now.toISOString(),
    sources,
    range: { from, to },
    totals: {
      feedback: activityDays.reduce((n, a) => n + a.feedback, 0),
      surveyAnswers: activityDays.reduce((n, a) => n + a.surveyAnswers, 0),
      recordings: activityDays.reduce((n, a) => n + a.recordings, 0),
      tests: new Set([...abResults, ...personalizationResults].map((r) => `${r.source}/${r.testId}`)).size,
    },
    abResults,
    personalizationResults,
    testDays,
    activity: activityDays,
    ratings: ratings.map((r) => ({
      day: r.day ?? '',
      question: r.question ?? '(no question)',
      feedback: r.feedback,
      averageRating: r.average_rating,
    })),
    survey: surveyQuestions(answers),
    durations: durationBins(durations.rows),
    health: health.map((h) => ({
      source: h.source_id ?? '',
      resource: h.resource ?? '',
      kind: h.kind ?? '',
      watermark: h.watermark,
      lagDays: h.lag_days,
      truncatedDays: h.truncated_days ?? 0,
      lastTruncatedDay: h.last_truncated_day,
      failedDays: h.failed_days ?? 0,
      rejectedItems: h.rejected_items ?? 0,
      lastLoadedAt: h.last_loaded_at?.toISOString() ?? null,
      lastRunStatus: h.last_run_status,
      lastRunFinishedAt: h.last_run_finished_at?.toISOString() ?? null,
    })),
  };
}

function surveyQuestions(
  rows: { question_id: number | null; question: string | null; answer: string | null; n: number }[],
): SurveyQuestion[] {
  const byQuestion = new Map<number, SurveyQuestion>();
  for (const row of rows) {
    const id = row.question_id ?? 0;
    let question = byQuestion.get(id);
    if (!question) {
      question = { questionId: id, question: row.question ?? `question ${id}`, answers: [], total: 0 };
      byQuestion.set(id, question);
    }
    question.answers.push({ answer: row.answer ?? '', count: row.n });
    question.total += row.n;
  }
  return [...byQuestion.values()]
    .sort((a, b) => b.total - a.total || a.questionId - b.questionId)
    .slice(0, QUESTIONS_SHOWN)
    .map((q) => {
      const shown = q.answers.slice(0, ANSWERS_PER_QUESTION);
      const rest = q.answers.slice(ANSWERS_PER_QUESTION).reduce((n, a) => n + a.count, 0);
      return { ...q, answers: rest > 0 ? [...shown, { answer: '(other answers)', count: rest }] : shown };
    });
}

/** width_bucket: 0 below the first edge (negative durations), i for [edge i-1, edge i), n past the last. */
function durationBins(rows: { bucket: number; n: number }[]): DurationBin[] {
  const labels = [
    '< 0',
    ...DURATION_EDGES.slice(1).map((edge, i) => `${DURATION_EDGES[i]}–${edge - 1}`),
    `${DURATION_EDGES.at(-1)}+`,
  ];
  return labels
    .map((label, bucket) => ({ label, count: rows.find((r) => r.bucket === bucket)?.n ?? 0 }))
    .filter((bin, bucket) => bucket > 0 || bin.count > 0);
}
