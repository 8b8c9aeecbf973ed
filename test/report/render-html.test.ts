import { describe, expect, it } from 'vitest';
import { chartJsSource } from '../../src/report/chart-library.js';
import { renderReportHtml } from '../../src/report/render-html.js';
import type { ReportData, VariantResult } from '../../src/report/report-data.js';

const HOSTILE = '</script><script>alert("x")</script><img src=x onerror=alert(1)>';

function reportData(overrides: Partial<ReportData> = {}): ReportData {
  return {
    generatedAt: '2026-03-11T05:00:00.000Z',
    sources: ['main'],
    range: { from: '2026-03-01', to: '2026-03-10' },
    totals: { feedback: 0, surveyAnswers: 0, recordings: 0, tests: 0 },
    abResults: [],
    personalizationResults: [],
    testDays: [],
    activity: [],
    ratings: [],
    survey: [],
    surveyDays: [],
    durationLabels: [],
    durationDays: [],
    dayMarks: [],
    comments: [],
    commentCount: 0,
    byUrl: [],
    byDevice: [],
    health: [],
    newFields: [],
    verification: { periodDays: 30, sources: [], differences: [] },
    ...overrides,
  };
}

describe('the report page', () => {
  it('inlines Chart.js, the data and the script, and forbids the page any network request', async () => {
    const chartJs = await chartJsSource();
    expect(chartJs).toMatch(/^\/\* Chart\.js 4\.\d+\.\d+ \| MIT License/);
    const html = renderReportHtml(reportData(), chartJs);
    expect(html).toContain(chartJs);
    expect(html).toContain(`<meta http-equiv="Content-Security-Policy" content="default-src 'none';`);
    expect(html).not.toMatch(/(src|href)=["']?(https?:)?\/\//i);
  });

  it('embeds each visitor comment once: in the comments table, not again in the page data', () => {
    const comment = 'The checkout page froze twice on my phone';
    const html = renderReportHtml(
      reportData({
        comments: [
          {
            source: 'main',
            day: '2026-03-02',
            dt: '2026-03-02T10:00:00.000Z',
            url: '/checkout',
            question: 'How was it?',
            rating: 2,
            device: 'mobile',
            comment,
            commentChars: comment.length,
          },
        ],
        commentCount: 1,
      }),
      '',
    );
    expect(html.split(comment)).toHaveLength(2);
    expect(html).toContain(`<td class="comment">${comment}</td>`);
    const json = /<script type="application\/json" id="report-data">(.*?)<\/script>/s.exec(html)?.[1] ?? '';
    expect(JSON.parse(json)).not.toHaveProperty('comments');
  });

  it('notes the fields the API sends that the spec does not describe, and says nothing when there are none', () => {
    expect(renderReportHtml(reportData(), '')).not.toContain('New fields from the API');
    const html = renderReportHtml(
      reportData({
        newFields: [
          {
            source: 'main',
            resource: 'feedback',
            field: 'x_score',
            firstSeenDay: '2026-03-06',
            lastSeenAt: '2026-03-09T04:00:00.000Z',
            lastRunShare: 0.25,
          },
        ],
      }),
      '',
    );
    expect(html).toContain('<h2>New fields from the API</h2>');
    expect(html).toContain('The API sends a field the spec does not describe.');
    expect(html).toMatch(
      /<td>feedback<\/td>\s*<td><code>x_score<\/code><\/td><td>2026-03-06<\/td><td>2026-03-09 04:00 UTC<\/td>\s*<td class="n">25%<\/td>/,
    );
  });

  it('says so where a chart would be empty, instead of drawing an empty chart', () => {
    const html = renderReportHtml(reportData(), '');
    expect(html).not.toContain('<canvas');
    for (const sentence of [
      'No tests of this kind in the warehouse.',
      'No test results were captured in this range.',
      'No feedback in this range.',
      'No survey answers in this range.',
      'No recordings in this range.',
      'Nothing loaded yet.',
      'Every day of this range is loaded and complete.',
      'No feedback comments in this range.',
    ])
      expect(html).toContain(sentence);
  });

  it('shows text from the warehouse as text: a test name or an answer cannot add markup or script', () => {
    const html = renderReportHtml(
      reportData({
        abResults: [
          {
            source: 'main',
            testId: 'ab-1',
            testName: HOSTILE,
            url: null,
            variant: HOSTILE,
            isControl: false,
            complete: 1,
            total: 2,
            conversion: 0.5,
            conversionLow: 0.1,
            conversionHigh: 0.9,
            absoluteLift: null,
            relativeLift: null,
            liftLow: null,
            liftHigh: null,
            pValue: null,
            pValueHolm: null,
            srmPValue: null,
            sampleRatioMismatch: false,
            srmStatus: 'allocation unknown',
            verdict: null,
          },
        ],
        survey: [{ questionId: 1, question: HOSTILE, answers: [{ answer: HOSTILE, count: 3 }], total: 3 }],
        // A server's error text and a visitor's comment, page and device reach tables too.
        dayMarks: [
          { source: HOSTILE, resource: 'feedback', day: '2026-03-02', status: 'failed', detail: HOSTILE },
        ],
        comments: [
          {
            source: 'main',
            day: '2026-03-02',
            dt: '2026-03-02T10:00:00.000Z',
            url: HOSTILE,
            question: HOSTILE,
            rating: 1,
            device: HOSTILE,
            comment: HOSTILE,
            commentChars: HOSTILE.length,
          },
        ],
        commentCount: 1,
        totals: { feedback: 0, surveyAnswers: 3, recordings: 0, tests: 1 },
      }),
      '',
    );
    expect(html).not.toContain('<img');
    expect(html.match(/<script/g)).toHaveLength(3);
    expect(html.match(/<\/script>/g)).toHaveLength(3);
    expect(html).toContain('&lt;/script&gt;&lt;script&gt;alert(&quot;x&quot;)');
    // In the JSON too: the data script element ends where it should.
    const json = /<script type="application\/json" id="report-data">(.*?)<\/script>/s.exec(html)?.[1] ?? '';
    expect((JSON.parse(json) as ReportData).survey[0]?.question).toBe(HOSTILE);
  });

  it('shows the verification section escaped: a source name cannot add markup there either', () => {
    const html = renderReportHtml(
      reportData({
        verification: {
          periodDays: 30,
          sources: [
            {
              source: HOSTILE,
              settled: 10,
              neverVerified: 6,
              oldestUnverifiedDay: '2026-03-01',
              lastVerifiedAt: '2026-03-11T04:00:00.000Z',
              leastRecentlyVerifiedAt: '2026-03-11T03:00:00.000Z',
              verifiedSince: 4,
              lacked: 3,
              changed: 0,
              gone: 0,
              moved: 0,
            },
          ],
          differences: [
            {
              source: HOSTILE,
              resource: HOSTILE,
              day: '2026-03-05',
              verifiedAt: '2026-03-11T04:00:00.000Z',
              lacked: 3,
              changed: 0,
              gone: 0,
              moved: 0,
            },
          ],
        },
      }),
      '',
    );
    const section = /<h2>Verification<\/h2>(.*?)<\/section>/s.exec(html)?.[1] ?? '';
    expect(section).toContain('&lt;/script&gt;&lt;script&gt;alert(&quot;x&quot;)');
    expect(section).not.toContain('<img');
    expect(section).not.toContain('<script');
    expect(html.match(/<script/g)).toHaveLength(3);
  });

  it('has a source column in the results tables when several sources are shown, and none for one', () => {
    const row = (source: string, testId: string): VariantResult => ({
      source,
      testId,
      testName: 'Checkout button',
      url: null,
      variant: 'control',
      isControl: true,
      complete: 10,
      total: 100,
      conversion: 0.1,
      conversionLow: 0.05,
      conversionHigh: 0.17,
      absoluteLift: null,
      relativeLift: null,
      liftLow: null,
      liftHigh: null,
      pValue: null,
      pValueHolm: null,
      srmPValue: null,
      sampleRatioMismatch: false,
      srmStatus: 'allocation unknown',
      verdict: null,
    });
    const tableOf = (html: string, name: string) => {
      const table = new RegExp(`<table[^>]* data-csv="${name}">([\\s\\S]*?)</table>`).exec(html)?.[1] ?? '';
      const headers = [...table.matchAll(/<th>([^<]*)<\/th>/g)].map((m) => m[1]);
      const firstCells = [...table.matchAll(/<tr class="[^"]*" data-source="[^"]*"><td[^>]*>([^<]*)/g)].map(
        (m) => m[1],
      );
      return { headers, firstCells };
    };
    const two = renderReportHtml(
      reportData({
        sources: ['main', 'shop'],
        abResults: [row('main', 'ab-1'), row('shop', 'ab-1')],
        personalizationResults: [row('shop', 'p-1')],
      }),
      '',
    );
    for (const [name, sources] of [
      ['ab-results', ['main', 'shop']],
      ['personalization-results', ['shop']],
    ] as const) {
      const table = tableOf(two, name);
      expect(table.headers[0], name).toBe('source');
      expect(table.headers).toHaveLength(14);
      expect(table.firstCells, name).toEqual(sources);
    }
    const one = tableOf(renderReportHtml(reportData({ abResults: [row('main', 'ab-1')] }), ''), 'ab-results');
    expect(one.headers[0]).toBe('test');
    expect(one.headers).toHaveLength(13);
    expect(one.firstCells).toEqual(['Checkout button']);
  });

  it('gives a comment only the webhook has delivered no time: it says so and names its receipt day', () => {
    const comment = (dt: string | null) => ({
      source: 'main',
      day: '2026-03-09',
      dt,
      url: '/cart',
      question: 'How was it?',
      rating: null,
      device: null,
      comment: 'Where is the basket?',
      commentChars: 20,
    });
    const html = renderReportHtml(
      reportData({ comments: [comment(null), comment('2026-03-08T22:15:09.000Z')], commentCount: 2 }),
      '',
    );
    const when = [
      ...html.matchAll(/<tr data-source="main" data-day="2026-03-09">\s*<td class="when">(.*?)<\/td>/g),
    ].map((m) => m[1]?.replace(/<[^>]*>/g, ''));
    expect(when).toEqual([
      'webhook only, not yet read from the API (received 2026-03-09)',
      '2026-03-08 22:15 UTC',
    ]);
  });

  it('colours a result row by its verdict: an SRM row is never green or red, an unchecked test says allocation unknown', () => {
    const variant = (overrides: Partial<VariantResult>): VariantResult => ({
      source: 'main',
      testId: 'ab-1',
      testName: 'Checkout button',
      url: null,
      variant: 'variant 1',
      isControl: false,
      complete: 150,
      total: 1000,
      conversion: 0.15,
      conversionLow: 0.13,
      conversionHigh: 0.17,
      // Better than the control at p < 0.001: green before the verdict, SRM or not.
      absoluteLift: 0.05,
      relativeLift: 0.5,
      liftLow: 0.02,
      liftHigh: 0.08,
      pValue: 0.0001,
      pValueHolm: 0.0001,
      srmPValue: null,
      sampleRatioMismatch: false,
      srmStatus: 'allocation unknown',
      verdict: 'winner',
      ...overrides,
    });
    const html = renderReportHtml(
      reportData({
        abResults: [
          variant({ testId: 'ab-1', testName: 'Unchecked' }),
          variant({
            testId: 'ab-2',
            testName: 'Skewed',
            srmPValue: 1e-9,
            sampleRatioMismatch: true,
            srmStatus: 'mismatch',
            verdict: 'untrustworthy',
          }),
          variant({ testId: 'ab-3', testName: 'Half declared', srmStatus: 'allocation incomplete' }),
        ],
      }),
      '',
    );
    const rows = [...html.matchAll(/<tr class="([^"]*)" data-source="main">([\s\S]*?)<\/tr>/g)].map((m) => ({
      cls: m[1],
      text: m[2] ?? '',
    }));
    expect(rows).toHaveLength(3);
    // A split declared for some variants only is not checked either, and says so.
    expect(rows[2]?.text).toContain('allocation incomplete');
    expect(rows[0]?.cls).toBe('win');
    expect(rows[0]?.text).toContain('allocation unknown');
    expect(rows[0]?.text).toContain('winner');
    expect(rows[0]?.text).not.toContain('SRM');
    expect(rows[1]?.cls).toBe('suspect');
    expect(rows[1]?.text).toContain('title="sample ratio mismatch">SRM');
    expect(rows[1]?.text).toContain('untrustworthy');
  });
});
