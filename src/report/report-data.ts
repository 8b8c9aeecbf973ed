import { type Kysely, sql } from 'kysely';
import type { Database } from '../db/database.js';
import { schemaDriftRows, unfinishedDays } from '../ledger/read.js';
import type { WindowedResource } from '../schemas/resource-names.js';
import { type DayString, todayUtc } from '../time/days.js';
import { loadVerification, type Verification } from './verification-data.js';

/**
 * What the report shows, read from the analyst views (migration 0004): the same numbers an
 * analyst gets from SQL; and, from the ledger (sync_windows, watermarks), which days are not
 * simply loaded. Plain JSON-able data, per source and day where the page filters by them;
 * render-html.ts turns it into the page, browser/report-view.ts shapes it for a filter.
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
  /** Holm's adjustment across the test's comparisons with its control (migration 0012). */
  pValueHolm: number | null;
  srmPValue: number | null;
  /** The variants' totals are too far from the declared split: the test's results are suspect. */
  sampleRatioMismatch: boolean;
  /**
   * 'allocation unknown' when no split is declared for the test (migration 0024), 'allocation
   * incomplete' when it names only some variants (0037): not checked either way.
   */
  srmStatus: string | null;
  /** winner, loser, inconclusive or untrustworthy (an SRM); null for the control. */
  verdict: 'winner' | 'loser' | 'inconclusive' | 'untrustworthy' | null;
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

/**
 * The daily rows below are per source and day, so the page can filter by source and dates
 * without a server; it sums them over the sources chosen.
 */
export interface ActivityDay {
  source: string;
  day: DayString;
  feedback: number;
  surveyAnswers: number;
  recordings: number;
  averageDuration: number | null;
}

export interface RatingDay {
  source: string;
  day: DayString;
  question: string;
  feedback: number;
  /** Feedback items with a rating: the weight of averageRating when sources are summed. */
  rated: number;
  averageRating: number | null;
}

export interface SurveyQuestion {
  questionId: number;
  question: string;
  answers: { answer: string; count: number }[];
  total: number;
}

/** Answers of a charted question on one day; answers past the question's top ones are OTHER_ANSWERS. */
export interface SurveyAnswerDay {
  source: string;
  day: DayString;
  questionId: number;
  answer: string;
  count: number;
}

export interface DurationDay {
  source: string;
  day: DayString;
  /** Index into ReportData.durationLabels. */
  bin: number;
  count: number;
}

/**
 * A day of a day-windowed resource that is not simply done (sync_windows): the page marks it on
 * the daily charts instead of drawing it as a quiet day.
 * - failed: the last fetch failed; the day's rows are missing or stale.
 * - not-loaded: no window at all (before the first loaded day, or never fetched yet).
 * - truncated: the API returned as many items as it allows; items may be missing.
 * - unfinished: an open window of a day that has since ended: its last fetch ran before the day
 *   was over (the next run fetches it again), so its count is a lower bound.
 * - open: today, loaded so far and fetched again by the next run. Only today: a nightly sync
 *   leaves today open, but a report ending yesterday must not call its last day "today".
 */
export type DayStatus = 'failed' | 'not-loaded' | 'truncated' | 'unfinished' | 'open';

export interface DayMark {
  source: string;
  resource: WindowedResource;
  day: DayString;
  status: DayStatus;
  /** Why, in a few words: the error, the item count, the first loaded day. */
  detail: string;
}

export interface FeedbackComment {
  source: string;
  day: DayString;
  /**
   * When the feedback was given (ISO, UTC); null while only a webhook has delivered it: the
   * webhook body carries no time, and `day` is then the day the delivery was received.
   */
  dt: string | null;
  url: string | null;
  question: string | null;
  rating: number | null;
  device: string | null;
  /** The comment, its first COMMENT_CHARS characters when longer. */
  comment: string;
  /** The comment's whole length in characters, so the page can say it was cut. */
  commentChars: number;
}

/** Feedback of one source and day on one page (url) or device. */
export interface BreakdownDay {
  source: string;
  day: DayString;
  key: string;
  feedback: number;
  comments: number;
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
  surveyDays: SurveyAnswerDay[];
  durationLabels: string[];
  durationDays: DurationDay[];
  dayMarks: DayMark[];
  comments: FeedbackComment[];
  /** How many comments the range has; `comments` holds the most recent COMMENTS_SHOWN. */
  commentCount: number;
  byUrl: BreakdownDay[];
  byDevice: BreakdownDay[];
  health: HealthRow[];
  /** Fields the API sends that the spec does not describe (schema_drift), newest first. */
  newFields: NewField[];
  /** The verifies' progress and the days they found different (verification-data.ts). */
  verification: Verification;
}

/** A field of the API's items the spec does not describe: kept in raw, not in a column. */
export interface NewField {
  source: string;
  resource: string;
  field: string;
  firstSeenDay: DayString;
  lastSeenAt: string;
  /** Share of the items of the last run that carried it (null when that run loaded none). */
  lastRunShare: number | null;
}

/**
 * The data the page embeds as JSON: all but the comments, which are in the page once, as the
 * rows of its comments table (the script searches those rows; visitor text is most of a page).
 */
export type PageData = Omit<ReportData, 'comments'>;

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

/** Most answers shown per question; the rest are summed up as OTHER_ANSWERS. */
const ANSWERS_PER_QUESTION = 8;
const OTHER_ANSWERS = '(other answers)';
/** Questions charted, the most answered first. */
const QUESTIONS_SHOWN = 12;
/** Edges of the duration histogram, in the service's unit (which the spec does not name). */
const DURATION_EDGES = [0, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600];
/** Comments embedded in the page, the most recent first: enough to read, small enough to open. */
const COMMENTS_SHOWN = 1000;
/**
 * Characters of a comment embedded in the page: a comment of the API is not bounded, and 167 of
 * 200 KB made a 66 MB page (each is in the HTML table and in the data). 2,000 holds the comments
 * people write (a few sentences) whole and keeps 1,000 of them at about 4 MB (20 MB if every
 * character were one that both HTML and JSON escape).
 */
export const COMMENT_CHARS = 2000;
/** Pages kept by name in the breakdown by URL; the others are summed up as OTHER_PAGES. */
const URLS_SHOWN = 200;
const OTHER_PAGES = '(other pages)';
/** A failed day's error, shortened for a table cell (errors reaching the database carry no headers). */
const ERROR_CHARS = 160;

export async function loadReportData(
  db: Kysely<Database>,
  options: ReportOptions,
  now: Date = new Date(),
): Promise<ReportData> {
  const { source, from, to } = options;
  const sources = await loadSources(db, source);
  const testDays = await loadTestDays(db, options);
  const activity = await loadActivity(db, options);
  const ratings = await loadRatings(db, options);
  const answers = await loadSurveyAnswers(db, options);
  const durationDays = await loadDurationDays(db, options);
  const health = await loadHealth(db, source);
  const abResults = await loadVariantResults(db, 'ab_test_results', source);
  const personalizationResults = await loadVariantResults(db, 'personalization_results', source);
  const survey = surveyQuestions(answers);
  return {
    generatedAt: now.toISOString(),
    sources,
    range: { from, to },
    totals: reportTotals(activity, [...abResults, ...personalizationResults]),
    abResults,
    personalizationResults,
    testDays,
    activity,
    ratings,
    survey,
    surveyDays: surveyAnswerDays(answers, survey),
    durationLabels: DURATION_LABELS,
    durationDays,
    dayMarks: await loadDayMarks(db, sources, from, to, now),
    ...(await loadComments(db, options)),
    byUrl: keepTop(await loadBreakdown(db, options, 'url'), URLS_SHOWN, OTHER_PAGES),
    byDevice: await loadBreakdown(db, options, 'device'),
    newFields: await loadNewFields(db, source),
    health,
    verification: await loadVerification(db, source, now),
  };
}

/** The warehouse's sources, or only `source` when given (none when the warehouse lacks it). */
async function loadSources(db: Kysely<Database>, source: string | undefined): Promise<string[]> {
  return (await db.selectFrom('sources').select('source_id').orderBy('source_id').execute())
    .map((s) => s.source_id)
    .filter((s) => source === undefined || s === source);
}

/** The tiles: items of the range, and tests with results (counted once per source and test id). */
function reportTotals(
  activity: readonly ActivityDay[],
  results: readonly VariantResult[],
): ReportData['totals'] {
  return {
    feedback: activity.reduce((n, a) => n + a.feedback, 0),
    surveyAnswers: activity.reduce((n, a) => n + a.surveyAnswers, 0),
    recordings: activity.reduce((n, a) => n + a.recordings, 0),
    tests: new Set(results.map((r) => `${r.source}/${r.testId}`)).size,
  };
}

/** A results view's variants of the tests not removed, the control first within a test. */
async function loadVariantResults(
  db: Kysely<Database>,
  view: 'ab_test_results' | 'personalization_results',
  source: string | undefined,
): Promise<VariantResult[]> {
  const rows = await db
    .selectFrom(view)
    .selectAll()
    .where('removed_at', 'is', null)
    .$call((q) => (source === undefined ? q : q.where('source_id', '=', source)))
    .orderBy('source_id')
    .orderBy('test_name')
    .orderBy('test_id')
    .orderBy('is_control', 'desc')
    .orderBy('variant')
    .execute();
  return rows.map((r) => ({
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
    pValueHolm: r.p_value_holm,
    srmPValue: r.srm_p_value,
    sampleRatioMismatch: r.sample_ratio_mismatch === true,
    srmStatus: r.srm_status,
    verdict: r.verdict,
  }));
}

async function loadTestDays(db: Kysely<Database>, { source, from, to }: ReportOptions): Promise<TestDay[]> {
  const rows = await db
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
    .execute();
  return rows.map((r) => ({
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
  }));
}

async function loadActivity(
  db: Kysely<Database>,
  { source, from, to }: ReportOptions,
): Promise<ActivityDay[]> {
  const rows = await db
    .selectFrom('daily_activity')
    .select([
      'source_id',
      'day',
      sql<number>`feedback_count::int`.as('feedback'),
      sql<number>`survey_answer_count::int`.as('survey_answers'),
      sql<number>`recording_count::int`.as('recordings'),
      'average_recording_duration',
    ])
    .where('day', '>=', from)
    .where('day', '<=', to)
    .$call((q) => (source === undefined ? q : q.where('source_id', '=', source)))
    .orderBy('day')
    .orderBy('source_id')
    .execute();
  return rows.map((a) => ({
    source: a.source_id ?? '',
    day: a.day ?? '',
    feedback: a.feedback,
    surveyAnswers: a.survey_answers,
    recordings: a.recordings,
    averageDuration: a.average_recording_duration,
  }));
}

/** Ratings per question: the scales may differ between questions, so they are not averaged together. */
async function loadRatings(db: Kysely<Database>, { source, from, to }: ReportOptions): Promise<RatingDay[]> {
  const rows = await db
    .selectFrom('feedback_enriched')
    .select([
      'source_id',
      'day',
      'question',
      sql<number>`count(*)::int`.as('feedback'),
      sql<number>`count(rating)::int`.as('rated'),
      sql<number | null>`avg(rating)::float8`.as('average_rating'),
    ])
    .where('day', '>=', from)
    .where('day', '<=', to)
    .$call((q) => (source === undefined ? q : q.where('source_id', '=', source)))
    .groupBy(['source_id', 'day', 'question'])
    .orderBy('question')
    .orderBy('day')
    .orderBy('source_id')
    .execute();
  return rows.map((r) => ({
    source: r.source_id ?? '',
    day: r.day ?? '',
    question: r.question ?? '(no question)',
    feedback: r.feedback,
    rated: r.rated,
    averageRating: r.average_rating,
  }));
}

/** Survey answers counted per source, day, question and answer text. */
async function loadSurveyAnswers(db: Kysely<Database>, { source, from, to }: ReportOptions) {
  return db
    .selectFrom('survey_answers_enriched')
    .select(['source_id', 'day', 'question_id', 'question', 'answer', sql<number>`count(*)::int`.as('n')])
    .where('day', '>=', from)
    .where('day', '<=', to)
    .$call((q) => (source === undefined ? q : q.where('source_id', '=', source)))
    .groupBy(['source_id', 'day', 'question_id', 'question', 'answer'])
    .orderBy('question_id')
    .orderBy('day')
    .orderBy('source_id')
    .orderBy('answer')
    .execute();
}

/** Recordings per source, UTC day and bin of DURATION_EDGES (width_bucket's numbering). */
async function loadDurationDays(
  db: Kysely<Database>,
  { source, from, to }: ReportOptions,
): Promise<DurationDay[]> {
  const edges = sql.raw(`array[${DURATION_EDGES.join(', ')}]`);
  const durations = await sql<{ source_id: string; day: string; bucket: number; n: number }>`
    select source_id, ${sql.raw(`(dt at time zone 'UTC')::date`)}::text as day,
      width_bucket(duration, ${edges}) as bucket, count(*)::int as n
    from recordings
    where ${sql.raw(`(dt at time zone 'UTC')::date`)} between ${from}::date and ${to}::date
      ${source === undefined ? sql`` : sql`and source_id = ${source}`}
    group by 1, 2, 3 order by 2, 1, 3`.execute(db);
  return durations.rows.map((r) => ({ source: r.source_id, day: r.day, bin: r.bucket, count: r.n }));
}

async function loadHealth(db: Kysely<Database>, source: string | undefined): Promise<HealthRow[]> {
  const rows = await db
    .selectFrom('sync_health')
    .selectAll()
    .$call((q) => (source === undefined ? q : q.where('source_id', '=', source)))
    .execute();
  return rows.map((h) => ({
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
  }));
}

/**
 * Every day of the range, per source and day-windowed resource, that the ledger does not hold
 * as done and complete. The ledger is the evidence: a day is charted as a count only when its
 * window is done and not truncated; the watermark's start_day says why a day has no window.
 */
export async function loadDayMarks(
  db: Kysely<Database>,
  sources: readonly string[],
  from: DayString,
  to: DayString,
  now: Date = new Date(),
): Promise<DayMark[]> {
  if (sources.length === 0) return [];
  const today = todayUtc(now);
  const rows = await unfinishedDays(db, sources, from, to);
  return rows.map((r): DayMark => {
    const mark = { source: r.source_id, resource: r.resource, day: r.day };
    if (r.status === null)
      return {
        ...mark,
        status: 'not-loaded',
        detail:
          r.start_day === null
            ? 'nothing loaded yet for this resource'
            : r.day < r.start_day
              ? `before the first loaded day, ${r.start_day}`
              : 'not fetched yet',
      };
    if (r.status === 'failed')
      return { ...mark, status: 'failed', detail: shorten(r.last_error ?? 'the last fetch failed') };
    if (r.truncated === true)
      return {
        ...mark,
        status: 'truncated',
        detail: truncatedDetail({
          served: r.served_count,
          stored: r.item_count ?? 0,
          rejected: r.rejected_count ?? 0,
        }),
      };
    return r.day >= today
      ? { ...mark, status: 'open', detail: 'today: loaded so far, fetched again by the next run' }
      : {
          ...mark,
          status: 'unfinished',
          detail: 'last fetched before the day ended: items may be missing; fetched again by the next run',
        };
  });
}

/** What the ledger knows of a truncated day's fullest response. */
export interface TruncatedResponse {
  /** Most items one response for the day returned, valid or not; null in windows older than that count. */
  served: number | null;
  /** The day's items that passed validation and were stored. */
  stored: number;
  /** The day's items that failed validation (in rejects). */
  rejected: number;
}

/**
 * A truncated day in words. The count is what the response returned, valid and invalid items
 * alike: that is the number that reached the server's cap, while the stored count is lower by
 * the rejects (a cap of 200 with 3 invalid items stores 197, which read as "197, the most one
 * response returns" is untrue).
 */
export function truncatedDetail({ served, stored, rejected }: TruncatedResponse): string {
  const returned = served ?? stored + rejected;
  const kept = rejected > 0 ? `${stored} stored, ${rejected} invalid` : `${stored} stored`;
  return `a response returned ${returned} items, as many as one returns: items may be missing (${kept})`;
}

async function loadNewFields(db: Kysely<Database>, source: string | undefined): Promise<NewField[]> {
  const rows = await schemaDriftRows(db, { source, newestFirst: true });
  return rows.map((r) => ({
    source: r.source_id,
    resource: r.resource,
    field: r.field_path,
    firstSeenDay: r.first_seen_day,
    lastSeenAt: r.last_seen_at.toISOString(),
    lastRunShare: r.last_run_total === 0 ? null : r.last_run_items / r.last_run_total,
  }));
}

async function loadComments(
  db: Kysely<Database>,
  { source, from, to }: ReportOptions,
): Promise<{ comments: FeedbackComment[]; commentCount: number }> {
  const inRange = db
    .selectFrom('feedback_enriched')
    .where('day', '>=', from)
    .where('day', '<=', to)
    .where('comment', '<>', '')
    .$call((q) => (source === undefined ? q : q.where('source_id', '=', source)));
  const rows = await inRange
    .select(['source_id', 'day', 'dt', 'url', 'question', 'rating', 'device'])
    .select([
      sql<string>`left(comment, ${sql.lit(COMMENT_CHARS)})`.as('comment'),
      sql<number>`char_length(comment)`.as('comment_chars'),
    ])
    .orderBy('dt', 'desc')
    .orderBy('source_id')
    .orderBy('id', 'desc')
    .limit(COMMENTS_SHOWN)
    .execute();
  const count = await inRange.select(sql<number>`count(*)::int`.as('n')).executeTakeFirstOrThrow();
  return {
    commentCount: count.n,
    comments: rows.map((r) => ({
      source: r.source_id ?? '',
      day: r.day ?? '',
      dt: r.dt?.toISOString() ?? null,
      url: r.url,
      question: r.question,
      rating: r.rating,
      device: r.device,
      comment: r.comment ?? '',
      commentChars: r.comment_chars ?? 0,
    })),
  };
}

async function loadBreakdown(
  db: Kysely<Database>,
  { source, from, to }: ReportOptions,
  column: 'url' | 'device',
): Promise<BreakdownDay[]> {
  const rows = await db
    .selectFrom('feedback_enriched')
    .select([
      'source_id',
      'day',
      sql<string | null>`${sql.ref(column)}`.as('key'),
      sql<number>`count(*)::int`.as('feedback'),
      sql<number>`(count(*) filter (where comment <> ''))::int`.as('comments'),
    ])
    .where('day', '>=', from)
    .where('day', '<=', to)
    .$call((q) => (source === undefined ? q : q.where('source_id', '=', source)))
    .groupBy(['source_id', 'day', sql.ref(column)])
    .orderBy('day')
    .orderBy('source_id')
    .orderBy(sql.ref(column))
    .execute();
  return rows.map((r) => ({
    source: r.source_id ?? '',
    day: r.day ?? '',
    // A feedback without a visitor has no device; a provisional row has no url (and no day).
    key: r.key ?? (column === 'device' ? '(unknown device)' : '(no url)'),
    feedback: r.feedback,
    comments: r.comments,
  }));
}

/** The `limit` keys with the most feedback keep their name; the others become `other`, summed per source and day. */
export function keepTop(rows: BreakdownDay[], limit: number, other: string): BreakdownDay[] {
  const totals = new Map<string, number>();
  for (const r of rows) totals.set(r.key, (totals.get(r.key) ?? 0) + r.feedback);
  if (totals.size <= limit) return rows;
  const kept = new Set(
    [...totals]
      .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
      .slice(0, limit)
      .map(([key]) => key),
  );
  const out: BreakdownDay[] = [];
  const others = new Map<string, BreakdownDay>();
  for (const r of rows) {
    if (kept.has(r.key)) {
      out.push(r);
      continue;
    }
    const id = `${r.source}\u0000${r.day}`;
    const sum = others.get(id) ?? { source: r.source, day: r.day, key: other, feedback: 0, comments: 0 };
    sum.feedback += r.feedback;
    sum.comments += r.comments;
    others.set(id, sum);
  }
  return [...out, ...others.values()];
}

function shorten(text: string): string {
  return text.length <= ERROR_CHARS ? text : `${text.slice(0, ERROR_CHARS - 1)}…`;
}

/** The charted questions' answers per source and day, lumped as in SurveyQuestion. */
function surveyAnswerDays(
  rows: {
    source_id: string | null;
    day: string | null;
    question_id: number | null;
    answer: string | null;
    n: number;
  }[],
  survey: SurveyQuestion[],
): SurveyAnswerDay[] {
  const shown = new Map(survey.map((q) => [q.questionId, new Set(q.answers.map((a) => a.answer))]));
  const byKey = new Map<string, SurveyAnswerDay>();
  for (const row of rows) {
    const questionId = row.question_id ?? 0;
    const answers = shown.get(questionId);
    if (answers === undefined) continue;
    const text = row.answer ?? '';
    const answer = answers.has(text) && text !== OTHER_ANSWERS ? text : OTHER_ANSWERS;
    const source = row.source_id ?? '';
    const day = row.day ?? '';
    const key = JSON.stringify([source, day, questionId, answer]);
    const sum = byKey.get(key) ?? { source, day, questionId, answer, count: 0 };
    sum.count += row.n;
    byKey.set(key, sum);
  }
  return [...byKey.values()];
}

function surveyQuestions(
  rows: { question_id: number | null; question: string | null; answer: string | null; n: number }[],
): SurveyQuestion[] {
  const byQuestion = new Map<number, { question: string; answers: Map<string, number>; total: number }>();
  for (const row of rows) {
    const id = row.question_id ?? 0;
    let question = byQuestion.get(id);
    if (!question) {
      question = { question: row.question ?? `question ${id}`, answers: new Map(), total: 0 };
      byQuestion.set(id, question);
    }
    const answer = row.answer ?? '';
    question.answers.set(answer, (question.answers.get(answer) ?? 0) + row.n);
    question.total += row.n;
  }
  return [...byQuestion]
    .map(([questionId, q]) => ({
      questionId,
      question: q.question,
      total: q.total,
      answers: [...q.answers]
        .map(([answer, count]) => ({ answer, count }))
        .sort((a, b) => b.count - a.count || (a.answer < b.answer ? -1 : a.answer > b.answer ? 1 : 0)),
    }))
    .sort((a, b) => b.total - a.total || a.questionId - b.questionId)
    .slice(0, QUESTIONS_SHOWN)
    .map((q) => {
      const shown = q.answers.slice(0, ANSWERS_PER_QUESTION);
      const rest = q.answers.slice(ANSWERS_PER_QUESTION).reduce((n, a) => n + a.count, 0);
      return { ...q, answers: rest > 0 ? [...shown, { answer: OTHER_ANSWERS, count: rest }] : shown };
    });
}

/** width_bucket: 0 below the first edge (negative durations), i for [edge i-1, edge i), n past the last. */
const DURATION_LABELS = [
  '< 0',
  ...DURATION_EDGES.slice(1).map((edge, i) => `${DURATION_EDGES[i]}–${edge - 1}`),
  `${DURATION_EDGES.at(-1)}+`,
];
