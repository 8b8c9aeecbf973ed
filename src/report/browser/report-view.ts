/**
 * What the report page shows for a filter (a range of days and a set of sources), computed from
 * the rows embedded in the page: pure functions, no DOM, so Node tests them directly and the
 * page script (browser/page-script.ts) only draws their results.
 */
import type { WindowedResource } from '../../schemas/resource-names.js';
import { addDays, type DayString, daysFrom } from '../../time/days.js';
import type {
  ActivityDay,
  BreakdownDay,
  DayMark,
  DayStatus,
  FeedbackComment,
  RatingDay,
  TestDay,
} from '../report-data.js';

export interface ReportFilter {
  from: DayString;
  to: DayString;
  /** The sources shown; a row of any other source is left out. */
  sources: readonly string[];
}

export function inFilter(row: { source: string; day: DayString }, filter: ReportFilter): boolean {
  return row.day >= filter.from && row.day <= filter.to && filter.sources.includes(row.source);
}

/** Consecutive days of one source and resource with the same mark and reason: one row of the gaps table. */
export interface MarkRun {
  source: string;
  resource: WindowedResource;
  status: DayStatus;
  detail: string;
  from: DayString;
  to: DayString;
  days: number;
}

/**
 * The marks as runs of days, in the order of their first day: a source that has loaded nothing
 * yet is one row per resource, not one per day.
 */
export function markRuns(marks: readonly DayMark[]): MarkRun[] {
  const sorted = [...marks].sort(
    (a, b) =>
      compare(a.source, b.source) ||
      compare(a.resource, b.resource) ||
      compare(a.status, b.status) ||
      compare(a.detail, b.detail) ||
      compare(a.day, b.day),
  );
  const runs: MarkRun[] = [];
  for (const mark of sorted) {
    const last = runs.at(-1);
    if (
      last !== undefined &&
      last.source === mark.source &&
      last.resource === mark.resource &&
      last.status === mark.status &&
      last.detail === mark.detail &&
      addDays(last.to, 1) === mark.day
    ) {
      last.to = mark.day;
      last.days++;
    } else
      runs.push({
        source: mark.source,
        resource: mark.resource,
        status: mark.status,
        detail: mark.detail,
        from: mark.day,
        to: mark.day,
        days: 1,
      });
  }
  return runs.sort(
    (a, b) => compare(a.from, b.from) || compare(a.source, b.source) || compare(a.resource, b.resource),
  );
}

/** Whether a run of days shares a day and a source with the filter. */
export function runInFilter(
  run: { source: string; from: DayString; to: DayString },
  filter: ReportFilter,
): boolean {
  return run.from <= filter.to && run.to >= filter.from && filter.sources.includes(run.source);
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Worst first: a day shown for several sources takes the worst of their marks. */
const SEVERITY: Record<DayStatus, number> = {
  failed: 0,
  'not-loaded': 1,
  truncated: 2,
  unfinished: 3,
  open: 4,
};

/** Per day of the filter, the worst mark of the resource among the chosen sources (null: done). */
export function dayStatuses(
  marks: readonly DayMark[],
  resource: WindowedResource,
  filter: ReportFilter,
): Map<DayString, DayStatus> {
  const worst = new Map<DayString, DayStatus>();
  for (const mark of marks) {
    if (mark.resource !== resource || !inFilter(mark, filter)) continue;
    const seen = worst.get(mark.day);
    if (seen === undefined || SEVERITY[mark.status] < SEVERITY[seen]) worst.set(mark.day, mark.status);
  }
  return worst;
}

/**
 * A daily count as the charts draw it. `counts[i]` is the sum over the chosen sources on a day
 * every one of them has done (0 there is a real quiet day). Where some source's day is truncated,
 * open, failed or not loaded but another's is known, the sum is a lower bound: it goes to
 * `atLeast`. Where no chosen source's count is known (all failed or not loaded), both are null,
 * never 0. `marks[i]` is the worst mark of the day among the chosen sources.
 */
export interface DailySeries {
  days: DayString[];
  counts: (number | null)[];
  atLeast: (number | null)[];
  marks: (DayStatus | null)[];
}

const UNKNOWN: readonly DayStatus[] = ['failed', 'not-loaded'];

export function dailySeries<Row extends { source: string; day: DayString }>(
  rows: readonly Row[],
  value: (row: Row) => number,
  marks: readonly DayMark[],
  resource: WindowedResource,
  filter: ReportFilter,
): DailySeries {
  const days = daysFrom(filter.from, filter.to);
  const sums = new Map<DayString, number>();
  for (const row of rows) if (inFilter(row, filter)) sums.set(row.day, (sums.get(row.day) ?? 0) + value(row));
  const statuses = dayStatuses(marks, resource, filter);
  const unknownSources = new Map<DayString, number>();
  for (const mark of marks)
    if (mark.resource === resource && UNKNOWN.includes(mark.status) && inFilter(mark, filter))
      unknownSources.set(mark.day, (unknownSources.get(mark.day) ?? 0) + 1);
  const series: DailySeries = { days, counts: [], atLeast: [], marks: [] };
  for (const day of days) {
    const status = statuses.get(day) ?? null;
    const sum = sums.get(day) ?? 0;
    const known = (unknownSources.get(day) ?? 0) < filter.sources.length;
    series.marks.push(status);
    series.counts.push(status === null ? sum : null);
    series.atLeast.push(status !== null && known ? sum : null);
  }
  return series;
}

/**
 * A daily average weighted over the chosen sources (null where nothing was weighed, and on a
 * failed or not-loaded day, whose rows may be stale).
 */
export function dailyAverage<Row extends { source: string; day: DayString }>(
  rows: readonly Row[],
  weight: (row: Row) => number,
  average: (row: Row) => number | null,
  series: DailySeries,
  filter: ReportFilter,
): (number | null)[] {
  const sums = new Map<DayString, { weight: number; total: number }>();
  for (const row of rows) {
    const value = average(row);
    if (!inFilter(row, filter) || value === null || weight(row) === 0) continue;
    const sum = sums.get(row.day) ?? { weight: 0, total: 0 };
    sum.weight += weight(row);
    sum.total += weight(row) * value;
    sums.set(row.day, sum);
  }
  return series.days.map((day, i) => {
    const mark = series.marks[i];
    if (mark === 'failed' || mark === 'not-loaded') return null;
    const sum = sums.get(day);
    return sum === undefined ? null : sum.total / sum.weight;
  });
}

export function activityTotals(
  activity: readonly ActivityDay[],
  filter: ReportFilter,
): { feedback: number; surveyAnswers: number; recordings: number } {
  const totals = { feedback: 0, surveyAnswers: 0, recordings: 0 };
  for (const a of activity) {
    if (!inFilter(a, filter)) continue;
    totals.feedback += a.feedback;
    totals.surveyAnswers += a.surveyAnswers;
    totals.recordings += a.recordings;
  }
  return totals;
}

/** Average rating per question and day, weighted by the rated items of each source. */
export function ratingLines(
  ratings: readonly RatingDay[],
  series: DailySeries,
  filter: ReportFilter,
): { question: string; data: (number | null)[] }[] {
  const questions = [...new Set(ratings.filter((r) => inFilter(r, filter)).map((r) => r.question))];
  return questions.map((question) => ({
    question,
    data: dailyAverage(
      ratings.filter((r) => r.question === question),
      (r) => r.rated,
      (r) => r.averageRating,
      series,
      filter,
    ),
  }));
}

/** Sums of `count` per key within the filter, in the order of `keys` (a key with no row: 0). */
export function countsByKey<Row extends { source: string; day: DayString; count: number }, K>(
  rows: readonly Row[],
  key: (row: Row) => K,
  keys: readonly K[],
  filter: ReportFilter,
): number[] {
  const sums = new Map<K, number>();
  for (const row of rows)
    if (inFilter(row, filter)) sums.set(key(row), (sums.get(key(row)) ?? 0) + row.count);
  return keys.map((k) => sums.get(k) ?? 0);
}

/** Rows of a breakdown table (feedback by page, by device). */
export const BREAKDOWN_ROWS = 25;

export interface BreakdownRow {
  key: string;
  feedback: number;
  /** Of all feedback in the filter. */
  share: number;
  comments: number;
}

/** Feedback per page or device within the filter, the most first, at most `limit` rows. */
export function breakdown(
  rows: readonly BreakdownDay[],
  filter: ReportFilter,
  limit: number,
): BreakdownRow[] {
  const sums = new Map<string, { feedback: number; comments: number }>();
  let all = 0;
  for (const row of rows) {
    if (!inFilter(row, filter)) continue;
    const sum = sums.get(row.key) ?? { feedback: 0, comments: 0 };
    sum.feedback += row.feedback;
    sum.comments += row.comments;
    sums.set(row.key, sum);
    all += row.feedback;
  }
  return [...sums]
    .map(([key, s]) => ({
      key,
      feedback: s.feedback,
      share: all === 0 ? 0 : s.feedback / all,
      comments: s.comments,
    }))
    .sort((a, b) => b.feedback - a.feedback || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    .slice(0, limit);
}

/** Whether a comment is within the filter and matches the search (case-insensitive, in its text, page or question). */
export function commentMatches(comment: FeedbackComment, filter: ReportFilter, search: string): boolean {
  if (!inFilter(comment, filter)) return false;
  const needle = search.trim().toLocaleLowerCase();
  if (needle === '') return true;
  return [comment.comment, comment.url ?? '', comment.question ?? ''].some((text) =>
    text.toLocaleLowerCase().includes(needle),
  );
}

/** One test's captured days within the filter, as the trend chart and its table show them. */
export interface TrendView {
  days: DayString[];
  /** The control first, then the other variants in order of appearance. */
  variants: string[];
  rows: TestDay[];
  /** Conversion in percent per variant and day; null where that day has no capture. */
  conversion: (number | null)[][];
}

export function trendView(rows: readonly TestDay[], filter: ReportFilter): TrendView {
  const shown = rows.filter((r) => inFilter(r, filter));
  const days = [...new Set(shown.map((r) => r.day))].sort();
  const variants = [
    ...new Set(
      [...shown.filter((r) => r.variant.toLowerCase() === 'control'), ...shown].map((r) => r.variant),
    ),
  ];
  return {
    days,
    variants,
    rows: shown,
    conversion: variants.map((variant) =>
      days.map((day) => {
        const r = shown.find((x) => x.day === day && x.variant === variant);
        return r && r.conversion != null ? r.conversion * 100 : null;
      }),
    ),
  };
}
