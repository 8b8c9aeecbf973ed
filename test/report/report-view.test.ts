import { describe, expect, it } from 'vitest';
import { csvField, toCsv } from '../../src/report/browser/csv.js';
import {
  activityTotals,
  breakdown,
  commentMatches,
  dailyAverage,
  dailySeries,
  type MarkRun,
  markRuns,
  ratingLines,
  runInFilter,
  trendView,
} from '../../src/report/browser/report-view.js';
import type { ActivityDay, DayMark, FeedbackComment, TestDay } from '../../src/report/report-data.js';
import { keepTop } from '../../src/report/report-data.js';
import { parseCsv } from './parse-csv.js';

const day = (d: number) => `2026-03-0${d}`;
const activity = (
  source: string,
  d: number,
  feedback: number,
  averageDuration: number | null = null,
): ActivityDay => ({
  source,
  day: day(d),
  feedback,
  surveyAnswers: 0,
  recordings: feedback,
  averageDuration,
});
const mark = (source: string, d: number, status: DayMark['status']): DayMark => ({
  source,
  resource: 'feedback',
  day: day(d),
  status,
  detail: '',
});
const all = { from: day(1), to: day(5), sources: ['a', 'b'] };

describe('the daily series of the report', () => {
  it('draws a done day as its count (0 is a quiet day) and a failed or not-loaded day as null, never 0', () => {
    const series = dailySeries(
      [activity('a', 1, 5), activity('a', 4, 9)],
      (r) => r.feedback,
      [mark('a', 2, 'failed'), mark('a', 3, 'not-loaded')],
      'feedback',
      { ...all, sources: ['a'] },
    );
    expect(series.days).toEqual([day(1), day(2), day(3), day(4), day(5)]);
    expect(series.counts).toEqual([5, null, null, 9, 0]);
    expect(series.atLeast).toEqual([null, null, null, null, null]);
    expect(series.marks).toEqual([null, 'failed', 'not-loaded', null, null]);
  });

  it('draws a truncated or open day as "at least" its count, not as a known count', () => {
    const series = dailySeries(
      [activity('a', 1, 4000), activity('a', 5, 3)],
      (r) => r.feedback,
      [mark('a', 1, 'truncated'), mark('a', 5, 'open')],
      'feedback',
      { ...all, sources: ['a'] },
    );
    expect(series.counts).toEqual([null, 0, 0, 0, null]);
    expect(series.atLeast).toEqual([4000, null, null, null, 3]);
    expect(series.marks).toEqual(['truncated', null, null, null, 'open']);
  });

  it("sums the chosen sources; a day failed in one source is the other one's count as a lower bound, marked failed", () => {
    const rows = [activity('a', 1, 2), activity('b', 1, 3), activity('a', 2, 7), activity('b', 2, 1)];
    const marks = [mark('b', 2, 'failed'), mark('a', 3, 'failed'), mark('b', 3, 'truncated')];
    const both = dailySeries(rows, (r) => r.feedback, marks, 'feedback', all);
    expect(both.counts.slice(0, 3)).toEqual([5, null, null]);
    expect(both.atLeast.slice(0, 3)).toEqual([null, 8, 0]);
    expect(both.marks.slice(0, 3)).toEqual([null, 'failed', 'failed']);
    // Source b alone: its day 2 is unknown, day 3 truncated.
    const b = dailySeries(rows, (r) => r.feedback, marks, 'feedback', { ...all, sources: ['b'] });
    expect(b.counts.slice(0, 3)).toEqual([3, null, null]);
    expect(b.atLeast.slice(0, 3)).toEqual([null, null, 0]);
    // Marks of another resource do not count.
    const recordings = dailySeries(rows, (r) => r.recordings, marks, 'recordings', all);
    expect(recordings.marks.every((m) => m === null)).toBe(true);
  });

  it('keeps to the dates of the filter', () => {
    const series = dailySeries(
      [activity('a', 1, 1), activity('a', 3, 2)],
      (r) => r.feedback,
      [],
      'feedback',
      {
        ...all,
        from: day(2),
        to: day(3),
      },
    );
    expect(series.days).toEqual([day(2), day(3)]);
    expect(series.counts).toEqual([0, 2]);
    expect(activityTotals([activity('a', 1, 1), activity('b', 3, 2)], { ...all, from: day(2) })).toEqual({
      feedback: 2,
      surveyAnswers: 0,
      recordings: 2,
    });
  });

  it("weights a daily average by each source's count and leaves unknown days out", () => {
    const rows = [activity('a', 1, 1, 10), activity('b', 1, 3, 30), activity('a', 2, 2, 5)];
    const series = dailySeries(rows, (r) => r.recordings, [mark('a', 2, 'failed')], 'feedback', all);
    const averages = dailyAverage(
      rows,
      (r) => r.recordings,
      (r) => r.averageDuration,
      series,
      all,
    );
    expect(averages).toEqual([25, null, null, null, null]);
    const ratings = ratingLines(
      [
        { source: 'a', day: day(1), question: 'q', feedback: 2, rated: 1, averageRating: 2 },
        { source: 'b', day: day(1), question: 'q', feedback: 9, rated: 3, averageRating: 4 },
      ],
      series,
      all,
    );
    expect(ratings).toEqual([{ question: 'q', data: [3.5, null, null, null, null] }]);
  });
});

describe('the tables of the report', () => {
  it('lists marked days as runs: consecutive days of one source, resource, status and reason', () => {
    const m = (
      d: number,
      status: DayMark['status'],
      detail = '',
      resource: DayMark['resource'] = 'feedback',
    ) => ({
      ...mark('a', d, status),
      resource,
      detail,
    });
    const runs = markRuns([
      m(1, 'not-loaded', 'before'),
      m(2, 'not-loaded', 'before'),
      m(3, 'failed', 'HTTP 503'),
      m(4, 'failed', 'HTTP 500'),
      m(5, 'failed', 'HTTP 500'),
      m(1, 'not-loaded', 'before', 'survey'),
    ]);
    expect(runs.map((r) => [r.from, r.to, r.days, r.resource, r.status, r.detail])).toEqual([
      [day(1), day(2), 2, 'feedback', 'not-loaded', 'before'],
      [day(1), day(1), 1, 'survey', 'not-loaded', 'before'],
      [day(3), day(3), 1, 'feedback', 'failed', 'HTTP 503'],
      [day(4), day(5), 2, 'feedback', 'failed', 'HTTP 500'],
    ]);
    const run = runs[0] as MarkRun;
    expect(runInFilter(run, { ...all, from: day(2) })).toBe(true);
    expect(runInFilter(run, { ...all, from: day(3) })).toBe(false);
    expect(runInFilter(run, { ...all, sources: ['b'] })).toBe(false);
  });

  it('breaks feedback down by key within the filter, the most first, with shares', () => {
    const rows = [
      { source: 'a', day: day(1), key: '/a', feedback: 1, comments: 1 },
      { source: 'a', day: day(2), key: '/b', feedback: 2, comments: 0 },
      { source: 'b', day: day(2), key: '/a', feedback: 3, comments: 2 },
      { source: 'b', day: day(5), key: '/c', feedback: 10, comments: 0 },
    ];
    expect(breakdown(rows, { ...all, to: day(4) }, 10)).toEqual([
      { key: '/a', feedback: 4, share: 4 / 6, comments: 3 },
      { key: '/b', feedback: 2, share: 2 / 6, comments: 0 },
    ]);
    expect(breakdown(rows, { ...all, sources: ['a'] }, 1)).toEqual([
      { key: '/b', feedback: 2, share: 2 / 3, comments: 0 },
    ]);
  });

  it('finds comments by text, page or question, ignoring case, within the filter', () => {
    const comment: FeedbackComment = {
      source: 'a',
      day: day(2),
      dt: `${day(2)}T10:00:00.000Z`,
      url: 'https://shop.example/Checkout',
      question: 'How was it?',
      rating: 2,
      device: 'mobile',
      comment: 'Too SLOW to load',
      commentChars: 16,
    };
    expect(commentMatches(comment, all, '')).toBe(true);
    expect(commentMatches(comment, all, ' slow ')).toBe(true);
    expect(commentMatches(comment, all, 'checkout')).toBe(true);
    expect(commentMatches(comment, all, 'how was')).toBe(true);
    expect(commentMatches(comment, all, 'fast')).toBe(false);
    expect(commentMatches(comment, { ...all, from: day(3) }, 'slow')).toBe(false);
    expect(commentMatches(comment, { ...all, sources: ['b'] }, '')).toBe(false);
  });

  it("shapes one test's days: the control first, a conversion per variant and day", () => {
    const row = (d: number, variant: string, conversion: number): TestDay => ({
      source: 'a',
      testKind: 'abtesting',
      testId: 't',
      testName: 'T',
      variant,
      day: day(d),
      complete: 1,
      total: 2,
      conversion,
      completeIncrement: null,
      totalIncrement: null,
    });
    const rows = [row(1, 'B', 0.2), row(1, 'Control', 0.1), row(2, 'B', 0.25), row(2, 'Control', 0.15)];
    const view = trendView(rows, all);
    expect(view.days).toEqual([day(1), day(2)]);
    expect(view.variants).toEqual(['Control', 'B']);
    expect(view.conversion).toEqual([
      [10, 15],
      [20, 25],
    ]);
    const single = trendView(rows, { ...all, from: day(2) });
    expect(single.days).toEqual([day(2)]);
    expect(single.rows).toHaveLength(2);
  });
});

describe('the breakdown by page, as loaded', () => {
  it('keeps the pages with the most feedback by name and sums the rest per source and day', () => {
    const row = (source: string, d: number, key: string, feedback: number) => ({
      source,
      day: day(d),
      key,
      feedback,
      comments: 1,
    });
    const rows = [row('a', 1, '/x', 5), row('a', 1, '/y', 1), row('a', 1, '/z', 3), row('b', 2, '/y', 1)];
    expect(keepTop(rows, 3, '(other pages)')).toBe(rows);
    expect(keepTop(rows, 2, '(other pages)')).toEqual([
      row('a', 1, '/x', 5),
      row('a', 1, '/z', 3),
      { source: 'a', day: day(1), key: '(other pages)', feedback: 1, comments: 1 },
      { source: 'b', day: day(2), key: '(other pages)', feedback: 1, comments: 1 },
    ]);
  });
});

describe('CSV', () => {
  it('quotes commas, quotes and line breaks, and parses back to the same rows', () => {
    const rows = [
      ['when', 'comment'],
      ['2026-03-01', 'Slow, "very" slow\nsecond line'],
      ['2026-03-02', ' padded '],
      ['2026-03-03', 'plain'],
      ['', 'carriage\r\nreturn'],
    ];
    const csv = toCsv(rows);
    expect(csv).toBe(
      'when,comment\r\n2026-03-01,"Slow, ""very"" slow\nsecond line"\r\n2026-03-02," padded "\r\n2026-03-03,plain\r\n,"carriage\r\nreturn"\r\n',
    );
    expect(parseCsv(csv)).toEqual(rows);
  });

  it('keeps a text a spreadsheet would run as a formula as text, and numbers as numbers', () => {
    expect(csvField('=HYPERLINK("https://evil.example","click")')).toBe(
      '"\'=HYPERLINK(""https://evil.example"",""click"")"',
    );
    expect(csvField('@SUM(A1)')).toBe("'@SUM(A1)");
    expect(csvField('+1 555 0100')).toBe("'+1 555 0100");
    expect(csvField('-1.5')).toBe('-1.5');
    expect(csvField('+12%')).toBe('+12%');
    expect(csvField('−0.50')).toBe('−0.50');
    // What the page formatted itself is no one's input: an interval of lift stays as shown.
    expect(csvField('+15.55 to +19.26')).toBe("'+15.55 to +19.26");
    expect(csvField('+15.55 to +19.26', true)).toBe('+15.55 to +19.26');
    expect(toCsv([['=1+1', '+1 to +2']], (_, column) => column === 1)).toBe("'=1+1,+1 to +2\r\n");
  });

  it('keeps a formula after leading white space, and one with a fullwidth sign, as text', () => {
    expect(csvField(' =HYPERLINK("https://evil.example")')).toBe('"\' =HYPERLINK(""https://evil.example"")"');
    expect(csvField('\n=1+1')).toBe('"\'\n=1+1"');
    expect(csvField('\u3000 @SUM(A1)')).toBe("'\u3000 @SUM(A1)");
    for (const sign of ['＝', '＋', '－', '＠']) {
      expect(csvField(`${sign}HYPERLINK("x")`)).toBe(`"'${sign}HYPERLINK(""x"")"`);
      expect(csvField(` ${sign}1`)).toBe(`' ${sign}1`);
    }
    // Text that only contains a sign further on is no formula.
    expect(csvField('a = b')).toBe('a = b');
    expect(csvField(' padded ')).toBe('" padded "');
  });
});
