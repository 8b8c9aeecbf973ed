import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { sql } from 'kysely';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CHROMIUM_INSTALL, findChromium, launchChromium } from '../../scripts/chromium.js';
import { chartJsSource } from '../../src/report/chart-library.js';
import { renderReportHtml } from '../../src/report/render-html.js';
import { loadDayMarks, loadReportData } from '../../src/report/report-data.js';
import type { Simulator } from '../../src/simulator/server.js';
import { addDays } from '../../src/time/days.js';
import { cliEnv, runCli } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { requireTool } from '../helpers/required-tool.js';
import { parseCsv } from './parse-csv.js';
import { fillReportWarehouse, REPORT_DAYS } from './report-warehouse.js';

/**
 * `insights-sync report` on a simulator-filled warehouse, opened in a real browser (Debian's
 * chromium, or the npm package @sparticuz/chromium, through playwright-core): every chart is drawn and shows data, nothing is fetched
 * from a network, the console stays clean. The ledger has a failed and a truncated day, which
 * every daily chart marks (null, not 0) and the gaps table lists; a second source then shows
 * that the page's filters (dates, source, log scale, test, comment search) redraw what they
 * should, and that each table's CSV parses back to its rows. The screenshot lands in test-output/report.png;
 * `npm run docs:report` copies it to docs/report.png for the README.
 */
const OUTPUT = path.resolve(import.meta.dirname, '../../test-output');
const REPORT = path.join(OUTPUT, 'report.html');
const SCREENSHOT = path.join(OUTPUT, 'report.png');
const CHROMIUM = await findChromium();
const RUN = requireTool(
  { name: 'chromium', check: 'the HTML report in a browser', install: CHROMIUM_INSTALL },
  CHROMIUM !== undefined,
);

interface DrawnChart {
  name: string;
  type: string | null;
  points: number;
  /** Canvas pixels that are not transparent: a drawn chart has many. */
  painted: number;
}

describe.runIf(RUN)('the HTML report, in a browser', () => {
  let t: TestDatabase;
  let sim: Simulator;
  let browser: Browser;
  let page: Page;
  let range: { from: string; to: string };
  /** A day whose feedback, survey and recordings windows failed (nothing of it loaded), and one truncated. */
  let failedDay: string;
  let truncatedDay: string;
  const problems: string[] = [];
  const requests: string[] = [];

  beforeAll(async () => {
    t = await createTestDatabase();
    const filled = await fillReportWarehouse(t);
    sim = filled.sim;
    range = { from: filled.from, to: filled.to };
    failedDay = addDays(range.to, -9);
    truncatedDay = await latestDayWithItems(t, addDays(range.to, -6), addDays(failedDay, 1));
    await markFailedAndTruncated(t, failedDay, truncatedDay);
    await mkdir(OUTPUT, { recursive: true });
    browser = await launchChromium(CHROMIUM);
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await sim?.stop();
    await t?.drop();
  });

  it('is written by `insights-sync report` as one HTML file', async () => {
    const result = await runCli(
      ['report', '--out', REPORT, '--from', range.from, '--to', range.to, '--source', 'main'],
      cliEnv({ DATABASE_URL: t.url, INSIGHTS_SCHEMA: t.schema }),
    );
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(
      new RegExp(`^wrote .*report\\.html \\(\\d+ KB\\): ${range.from} to ${range.to}`),
    );
    const html = await readFile(REPORT, 'utf8');
    expect(html).toMatch(/^<!doctype html>/);
    // Self-contained: no external script, style, image or font.
    expect(html).not.toMatch(/<(script|img|link)[^>]+(src|href)=/i);
    expect(html).toContain("default-src 'none'");
    // Only the page's own two scripts and its style, by hash.
    expect(html).not.toContain('unsafe-inline');
    expect(html).toMatch(/script-src 'sha256-[A-Za-z0-9+/]{43}=' 'sha256-[A-Za-z0-9+/]{43}=';/);
    expect(html).toMatch(/style-src 'sha256-[A-Za-z0-9+/]{43}=';/);
  });

  it('draws every chart with data, fetches nothing and logs no error', async () => {
    page = await browser.newPage({ viewport: { width: 1280, height: 900 }, deviceScaleFactor: 1 });
    page.on('console', (message) => {
      if (message.type() === 'error' || message.type() === 'warning') problems.push(message.text());
    });
    page.on('pageerror', (error) => problems.push(error.message));
    // Anything but the file itself would need a network: record it and refuse it.
    await page.route('**/*', (route) => {
      const url = route.request().url();
      if (url.startsWith('file://')) return route.continue();
      requests.push(url);
      return route.abort();
    });
    await page.goto(`file://${REPORT}`);
    await page.waitForSelector('body[data-charts-drawn]', { timeout: 15_000 });

    // Runs in the page; the compiler knows no DOM here (lib ES2023), so the few parts used are typed.
    const charts = await page.evaluate(() => {
      type ChartLike = { config: { type: string }; data: { datasets: { data: unknown[] }[] } };
      type Canvas = {
        dataset: { chart: string };
        width: number;
        height: number;
        getContext(kind: '2d'): { getImageData(...a: number[]): { data: Uint8ClampedArray } };
      };
      const win = globalThis as unknown as {
        Chart: { getChart(c: unknown): ChartLike | undefined };
        document: { querySelectorAll(selector: string): Iterable<Canvas> };
      };
      return [...win.document.querySelectorAll('canvas[data-chart]')].map((canvas) => {
        const chart = win.Chart.getChart(canvas);
        const pixels = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
        let painted = 0;
        for (let i = 3; i < pixels.length; i += 4) if ((pixels[i] ?? 0) > 0) painted++;
        return {
          name: canvas.dataset.chart,
          type: chart?.config.type ?? null,
          points: chart
            ? chart.data.datasets.reduce((n, d) => n + d.data.filter((v) => v !== null && v !== 0).length, 0)
            : 0,
          painted,
        };
      });
    });

    const survey = await t.db
      .selectFrom('survey_answers')
      .select(sql<number>`count(distinct question_id)::int`.as('n'))
      .executeTakeFirstOrThrow();
    expect(charts.map((c: DrawnChart) => c.name)).toEqual([
      'ab-results',
      'personalization-results',
      'test-trend',
      'feedback-daily',
      'survey-daily',
      ...Array.from({ length: survey.n }, (_, i) => `survey-${i}`),
      'recordings-daily',
      'recording-durations',
    ]);
    for (const chart of charts) {
      expect(chart.type, `${chart.name} has no chart`).not.toBeNull();
      expect(chart.points, `${chart.name} shows no data`).toBeGreaterThan(0);
      expect(chart.painted, `${chart.name} is blank`).toBeGreaterThan(2000);
    }
    expect(await page.getAttribute('body', 'data-charts-drawn')).toBe(String(charts.length));
    expect(problems).toEqual([]);
    expect(requests).toEqual([]);

    await page.screenshot({ path: SCREENSHOT, fullPage: true });
  });

  it('shows every test variant in its table, and the trend of whichever test is chosen', async () => {
    const variants = await t.db
      .selectFrom('ab_test_results')
      .select('variant')
      .where('removed_at', 'is', null)
      .execute();
    expect(await page.locator('section:has(canvas[data-chart="ab-results"]) tbody tr').count()).toBe(
      variants.length,
    );
    const options = await page
      .locator('#trend-test option')
      .evaluateAll((o) => o.map((x) => (x as unknown as { value: string }).value));
    const tests = await t.db
      .selectFrom('test_results')
      .select(sql<number>`count(distinct (test_kind, test_id))::int`.as('n'))
      .executeTakeFirstOrThrow();
    expect(options).toHaveLength(tests.n);
    const trend = () =>
      page.evaluate(() => {
        const charts = (
          globalThis as unknown as {
            reportCharts: Record<string, { data: { datasets: { label: string; data: unknown[] }[] } }>;
          }
        ).reportCharts;
        return charts['test-trend']?.data.datasets.map((d) => ({ label: d.label, points: d.data.length }));
      });
    const first = await trend();
    await page.selectOption('#trend-test', options.at(-1) ?? '');
    const last = await trend();
    expect(last).not.toEqual(first);
    // A point per day with a snapshot: the first sync and five nightly ones.
    expect(last?.[0]?.points).toBe(6);
    expect(problems).toEqual([]);
  });

  it('runs nothing injected: data payloads stay text, raw markup is refused by the CSP, every chart is drawn', async () => {
    const data = await loadReportData(t.db, { ...range, source: 'main' });
    const first = data.abResults[0];
    const question = data.survey[0];
    if (first === undefined || question === undefined)
      throw new Error('the warehouse has no test or question');
    // Visitor and customer input as an attacker would write it.
    first.testName = '<img src=x onerror=alert(1)>';
    question.question = '</script><script>alert(2)</script><style>body{display:none}</style>';
    const answer = question.answers[0];
    if (answer !== undefined) answer.answer = '"><svg onload=alert(3)>';
    let html = renderReportHtml(data, await chartJsSource());
    // And as if a text had slipped through unescaped: markup the page did not write itself.
    const INJECTED =
      '<img src=x onerror="alert(4)"><script>alert(5)</script><div style="display:none" onclick="alert(6)">x</div>';
    html = html.replace('<main>', `<main>${INJECTED}`);
    const file = path.join(OUTPUT, 'report-injected.html');
    await writeFile(file, html);

    const injected = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const dialogs: string[] = [];
    injected.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    await injected.addInitScript(() => {
      const win = globalThis as unknown as {
        cspViolations: { directive: string; blocked: string; sample: string }[];
        document: { addEventListener(type: string, listener: (event: unknown) => void): void };
      };
      win.cspViolations = [];
      win.document.addEventListener('securitypolicyviolation', (event) => {
        const e = event as { effectiveDirective: string; blockedURI: string; sample: string };
        win.cspViolations.push({ directive: e.effectiveDirective, blocked: e.blockedURI, sample: e.sample });
      });
    });
    await injected.route('**/*', (route) =>
      route.request().url().startsWith('file://') && route.request().url().endsWith('.html')
        ? route.continue()
        : route.abort(),
    );
    await injected.goto(`file://${file}`);
    await injected.waitForSelector('body[data-charts-drawn]', { timeout: 15_000 });

    const state = await injected.evaluate(() => {
      const win = globalThis as unknown as {
        cspViolations: { directive: string; blocked: string; sample: string }[];
        Chart: { getChart(c: unknown): unknown };
        document: {
          body: { dataset: { chartsDrawn?: string } };
          querySelectorAll(selector: string): Iterable<unknown>;
        };
      };
      const canvases = [...win.document.querySelectorAll('canvas[data-chart]')];
      return {
        violations: win.cspViolations,
        canvases: canvases.length,
        charts: canvases.filter((c) => win.Chart.getChart(c) !== undefined).length,
        drawn: win.document.body.dataset.chartsDrawn,
      };
    });
    await injected.close();

    expect(dialogs).toEqual([]);
    // The page's own scripts ran: every chart drawn, as on the clean page.
    expect(state.canvases).toBeGreaterThan(5);
    expect(state.charts).toBe(state.canvases);
    expect(state.drawn).toBe(String(state.canvases));
    // Each refusal is one of the injected parts: the inline script, the two handlers, the style
    // attribute and the image (img-src allows data: only). None is one of the page's own.
    const refused = state.violations.map((v) => v.directive).sort();
    expect(refused).toEqual(expect.arrayContaining(['script-src-attr', 'script-src-elem', 'style-src-attr']));
    for (const v of state.violations) {
      expect(['script-src-attr', 'script-src-elem', 'style-src-attr', 'img-src']).toContain(v.directive);
      expect(v.sample.includes('Chart.js') || v.sample.includes('report-data')).toBe(false);
    }
  });

  it('keeps every table inside its card at 800 and 1024 px: a wide one scrolls within it', async () => {
    interface Box {
      scrollWidth: number;
      clientWidth: number;
      className: string;
      querySelector(selector: string): { textContent: string | null } | null;
    }
    /** The cards wider inside than they show, and the page's own width. */
    const measure = async (width: number) => {
      await page.setViewportSize({ width, height: 900 });
      return page.evaluate(() => {
        const doc = (
          globalThis as unknown as {
            document: {
              querySelectorAll(selector: string): ArrayLike<Box>;
              documentElement: { scrollWidth: number };
            };
          }
        ).document;
        return {
          overflowing: Array.from(doc.querySelectorAll('section, .tiles, .filters'))
            .filter((card) => card.scrollWidth > card.clientWidth + 1)
            .map((card) => card.querySelector('h2')?.textContent ?? card.className),
          pageWidth: doc.documentElement.scrollWidth,
        };
      });
    };
    try {
      for (const width of [800, 1024]) {
        // Chart.js redraws its canvases for the new width a frame or two later: polled.
        await expect.poll(async () => (await measure(width)).overflowing, { timeout: 10_000 }).toEqual([]);
        // Nor does the page as a whole scroll sideways.
        expect((await measure(width)).pageWidth, `${width} px`).toBeLessThanOrEqual(width);
      }
    } finally {
      await page.setViewportSize({ width: 1280, height: 900 });
    }
  });

  it('fits every table cell inside its card at 1024 and 1440 px: the verdict and SRM p columns are not cut', async () => {
    try {
      for (const width of [1024, 1440])
        expect(await cellsPastTheirCard(page, width), `${width} px`).toEqual([]);
    } finally {
      await page.setViewportSize({ width: 1280, height: 900 });
    }
  });

  it('has a sync health row per resource; the three with a failed day need attention', async () => {
    const rows = await page.locator('section:has(h2:text("Sync health")) tbody tr').allTextContents();
    expect(rows).toHaveLength(6);
    const attention = await page
      .locator('section:has(h2:text("Sync health")) tr.attention td:nth-child(2)')
      .allTextContents();
    expect(attention.sort()).toEqual(['feedback', 'recordings', 'survey']);
  });

  it('marks the failed and the truncated day on the three daily charts and in the table: never drawn as 0', async () => {
    for (const name of ['feedback-daily', 'survey-daily', 'recordings-daily']) {
      const chart = await chartState(page, name);
      const failed = chart.labels.indexOf(failedDay);
      const truncated = chart.labels.indexOf(truncatedDay);
      expect(chart.labels).toHaveLength(REPORT_DAYS);
      const [counts, atLeast] = chart.datasets;
      // The failed day's count is unknown: null in every bar dataset, not 0.
      expect(counts?.data[failed], name).toBeNull();
      expect(atLeast?.data[failed], name).toBeNull();
      // The truncated day's count is a lower bound, drawn apart from the known counts.
      expect(counts?.data[truncated], name).toBeNull();
      expect(atLeast?.data[truncated], name).toBeGreaterThan(0);
      // A legend entry per kind of mark, naming its days; today is still open.
      const marked = Object.fromEntries(
        chart.datasets.filter((d) => d.mark).map((d) => [d.mark, d.markedDays]),
      );
      expect(marked, name).toEqual({ failed: [failedDay], truncated: [truncatedDay], open: [range.to] });
      // Every other day is a known count.
      const known = counts?.data.filter((v, i) => v !== null && i !== failed && i !== truncated) ?? [];
      expect(known, name).toHaveLength(REPORT_DAYS - 3);
    }
    const gaps = await visibleRows(page, '#gaps-table');
    const error = 'HTTP 503 from the API after 4 attempts';
    const truncatedWhy = expect.stringMatching(
      /^a response returned \d+ items, as many as one returns: items may be missing \(\d+ stored/,
    );
    expect(gaps).toEqual(
      expect.arrayContaining([
        [failedDay, failedDay, '1', 'main', 'feedback', 'failed', error],
        [failedDay, failedDay, '1', 'main', 'recordings', 'failed', error],
        [failedDay, failedDay, '1', 'main', 'survey', 'failed', error],
        [truncatedDay, truncatedDay, '1', 'main', 'feedback', 'truncated', truncatedWhy],
        [truncatedDay, truncatedDay, '1', 'main', 'recordings', 'truncated', truncatedWhy],
        [truncatedDay, truncatedDay, '1', 'main', 'survey', 'truncated', truncatedWhy],
      ]),
    );
    // Today is open for all three day-windowed resources; nothing else is marked.
    expect(gaps).toHaveLength(6 + 3);
  });

  it('calls an open window "today" only on today: a day last fetched before it ended is marked as such', async () => {
    const today = (await loadDayMarks(t.db, ['main'], range.to, range.to)).map((m) => m.status);
    expect(today).toEqual(['open', 'open', 'open']);
    // The same ledger read a day later, before the next sync: the day is over, its count a lower bound.
    const tomorrow = new Date(`${addDays(range.to, 1)}T01:00:00.000Z`);
    const marks = await loadDayMarks(t.db, ['main'], range.to, addDays(range.to, 1), tomorrow);
    expect(marks.filter((m) => m.day === range.to)).toEqual(
      ['feedback', 'recordings', 'survey'].map((resource) => ({
        source: 'main',
        resource,
        day: range.to,
        status: 'unfinished',
        detail: 'last fetched before the day ended: items may be missing; fetched again by the next run',
      })),
    );
    expect(marks.filter((m) => m.day !== range.to).map((m) => m.status)).toEqual([
      'not-loaded',
      'not-loaded',
      'not-loaded',
    ]);
  });

  it('reads a day without a window as not loaded, saying whether it is before the first loaded day', async () => {
    const before = addDays(range.from, -2);
    const marks = await loadDayMarks(t.db, ['main'], before, range.from);
    expect(marks.filter((m) => m.resource === 'survey')).toEqual([
      {
        source: 'main',
        resource: 'survey',
        day: before,
        status: 'not-loaded',
        detail: `before the first loaded day, ${range.from}`,
      },
      {
        source: 'main',
        resource: 'survey',
        day: addDays(before, 1),
        status: 'not-loaded',
        detail: `before the first loaded day, ${range.from}`,
      },
    ]);
    // A day inside the loaded range whose window was never written: not fetched yet.
    const gap = addDays(range.from, 3);
    await sql`delete from sync_windows where resource = 'survey' and day = ${gap}`.execute(t.db);
    try {
      expect(await loadDayMarks(t.db, ['main'], gap, gap)).toEqual([
        { source: 'main', resource: 'survey', day: gap, status: 'not-loaded', detail: 'not fetched yet' },
      ]);
    } finally {
      await sql`insert into sync_windows (source_id, resource, day, status) values ('main', 'survey', ${gap}, 'done')`.execute(
        t.db,
      );
    }
  });

  describe('with a second source, filtered in the page', () => {
    let all: Page;
    const otherDays = () => [addDays(range.to, -3), addDays(range.to, -2)];
    const HARD_COMMENT = 'Slow, "very" slow\nlike a sleepy zebra';

    beforeAll(async () => {
      await addOtherSource(t, range, otherDays(), HARD_COMMENT);
      // Without --source: every source, chosen in the page.
      const html = renderReportHtml(await loadReportData(t.db, range), await chartJsSource());
      const file = path.join(OUTPUT, 'report-all-sources.html');
      await writeFile(file, html);
      all = await browser.newPage({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
      all.on('pageerror', (error) => problems.push(error.message));
      all.on('console', (message) => {
        if (message.type() === 'error' || message.type() === 'warning') problems.push(message.text());
      });
      await all.goto(`file://${file}`);
      await all.waitForSelector('body[data-charts-drawn]', { timeout: 15_000 });
    }, 60_000);
    // Each test starts from the page as it opens: everything shown.
    beforeEach(async () => {
      await setFilter(all, { from: range.from, to: range.to, source: '' });
      if (await all.isChecked('#log-scale')) await all.uncheck('#log-scale');
      await all.fill('#comment-search', '');
    });
    afterAll(async () => {
      await all?.close();
    });

    it("the source filter redraws the charts and the tiles with that source's data", async () => {
      const mainFeedback = await countFeedback(t, 'main', range.from, range.to);
      const [first, second] = otherDays() as [string, string];
      const expectations = [
        { source: 'other', feedback: 3 },
        { source: 'main', feedback: mainFeedback },
        { source: '', feedback: mainFeedback + 3 },
      ];
      for (const { source, feedback } of expectations) {
        await setFilter(all, { source });
        expect(await all.textContent('[data-tile="feedback"]'), source).toBe(
          feedback.toLocaleString('en-US'),
        );
        const chart = await chartState(all, 'feedback-daily');
        const [counts, atLeast] = chart.datasets;
        const failed = chart.labels.indexOf(failedDay);
        if (source === 'other') {
          expect(counts?.data[chart.labels.indexOf(first)]).toBe(2);
          expect(counts?.data[chart.labels.indexOf(second)]).toBe(1);
          // Its ledger has the day that failed for main as done: a real quiet day.
          expect(counts?.data[failed]).toBe(0);
        } else if (source === 'main') {
          expect(counts?.data[failed]).toBeNull();
          expect(atLeast?.data[failed]).toBeNull();
        } else {
          // One source unknown, the other known: a lower bound (0), marked failed.
          expect(counts?.data[failed]).toBeNull();
          expect(atLeast?.data[failed]).toBe(0);
          expect(chart.datasets.find((d) => d.mark === 'failed')?.markedDays).toEqual([failedDay]);
        }
      }
      // The gap table follows: the other source has no failed day.
      await setFilter(all, { source: 'other' });
      expect((await visibleRows(all, '#gaps-table')).map((r) => r[5])).toEqual([
        'open (today)',
        'open (today)',
        'open (today)',
      ]);
      await setFilter(all, { source: '' });
    });

    it('the date filter redraws the daily charts, the tiles and the tables for those days only', async () => {
      const [from, to] = otherDays() as [string, string];
      await setFilter(all, { from, to });
      const chart = await chartState(all, 'feedback-daily');
      expect(chart.labels).toEqual([from, to]);
      const feedback = (await countFeedback(t, 'main', from, to)) + 3;
      expect(await all.textContent('[data-tile="feedback"]')).toBe(feedback.toLocaleString('en-US'));
      expect(chart.datasets[0]?.data.reduce((n: number, v) => n + (v ?? 0), 0)).toBe(feedback);
      const recordings = await chartState(all, 'recordings-daily');
      expect(recordings.labels).toEqual([from, to]);
      // Every comment row shown is of those days; the device table sums to the feedback shown.
      const days = await all
        .locator('#comments-table tbody tr:not([hidden])')
        .evaluateAll((rows) => rows.map((r) => (r as unknown as { dataset: { day: string } }).dataset.day));
      expect(days.length).toBeGreaterThan(0);
      expect(days.every((d) => d === from || d === to)).toBe(true);
      const devices = await visibleRows(all, '#feedback-by-device');
      expect(devices.reduce((n, r) => n + Number(r[1]), 0)).toBe(feedback);
      await setFilter(all, { from: range.from, to: range.to });
    });

    it('a log scale for the daily bars on demand', async () => {
      expect((await chartState(all, 'feedback-daily')).yType).toBe('linear');
      await all.check('#log-scale');
      await waitForRedraw(all);
      expect((await chartState(all, 'feedback-daily')).yType).toBe('logarithmic');
      expect((await chartState(all, 'recordings-daily')).yType).toBe('logarithmic');
      await all.uncheck('#log-scale');
    });

    it('searches the comments, and each table downloads as CSV that parses back to its rows', async () => {
      const before = (await visibleRows(all, '#comments-table')).length;
      await all.fill('#comment-search', 'ZEBRA');
      const found = await visibleRows(all, '#comments-table');
      expect(found).toHaveLength(1);
      expect(found[0]?.at(-1)).toBe(HARD_COMMENT);
      expect(await all.textContent('#comment-count')).toBe(`1 of ${before} comments`);

      const buttons = await all.locator('button.csv').count();
      expect(buttons).toBeGreaterThanOrEqual(8);
      for (let i = 0; i < buttons; i++) {
        const button = all.locator('button.csv').nth(i);
        const name = (await button.getAttribute('data-csv-for')) ?? '';
        const [download] = await Promise.all([all.waitForEvent('download'), button.click()]);
        expect(download.suggestedFilename()).toBe(`${name}.csv`);
        const text = await readFile((await download.path()) ?? '', 'utf8');
        expect(text.startsWith('\ufeff'), name).toBe(true);
        const shown = await all.locator(`table[data-csv="${name}"]`).evaluate((table) =>
          [
            ...(
              table as unknown as {
                rows: Iterable<{ hidden: boolean; cells: Iterable<{ textContent: string }> }>;
              }
            ).rows,
          ]
            .filter((row) => !row.hidden)
            .map((row) => [...row.cells].map((cell) => cell.textContent)),
        );
        expect(parseCsv(text.slice(1)), name).toEqual(shown);
        if (name === 'feedback-comments') expect(shown[1]?.at(-1)).toBe(HARD_COMMENT);
      }
      await all.fill('#comment-search', '');
      expect(await visibleRows(all, '#comments-table')).toHaveLength(before);
    });

    it('says whose test each result row is in a source column, and fits it in the card at 1024 and 1440 px', async () => {
      for (const name of ['ab-results', 'personalization-results']) {
        const header = await all.locator(`table[data-csv="${name}"] thead th`).allTextContents();
        expect(header.slice(0, 2), name).toEqual(['source', 'test']);
        const sources = await all.locator(`table[data-csv="${name}"] tbody tr`).evaluateAll((rows) =>
          rows.map((r) => {
            const row = r as unknown as {
              dataset: { source: string };
              cells: ArrayLike<{ textContent: string }>;
            };
            return [row.dataset.source, row.cells[0]?.textContent];
          }),
        );
        expect(sources.length, name).toBeGreaterThan(0);
        for (const [source, cell] of sources) expect(cell).toBe(source);
      }
      try {
        for (const width of [1024, 1440]) {
          expect(await cellsPastTheirCard(all, width), `${width} px`).toEqual([]);
          await all.screenshot({
            path: path.join(OUTPUT, `report-all-sources-${width}.png`),
            fullPage: true,
          });
        }
      } finally {
        await all.setViewportSize({ width: 1280, height: 900 });
      }
    });

    it('Test results day by day: one captured day is a bar per variant and a table, not dots', async () => {
      const key = await all.locator('#trend-test option').first().getAttribute('value');
      const [kind, source, testId] = JSON.parse(key ?? '[]') as [string, string, string];
      const variants = await t.db
        .selectFrom('test_result_daily')
        .select('variant')
        .where('test_kind', '=', kind as 'abtesting')
        .where('source_id', '=', source)
        .where('test_id', '=', testId)
        .where('day', '=', range.to)
        .execute();
      expect(variants.length).toBeGreaterThan(1);
      expect((await chartState(all, 'test-trend')).type).toBe('line');
      await setFilter(all, { from: range.to, to: range.to });
      const chart = await chartState(all, 'test-trend');
      expect(chart.type).toBe('bar');
      expect([...chart.labels].sort()).toEqual(variants.map((v) => v.variant).sort());
      expect(chart.datasets[0]?.data.every((v) => typeof v === 'number')).toBe(true);
      expect(await visibleRows(all, '#trend-table')).toHaveLength(variants.length);
      await setFilter(all, { from: range.from });
      expect((await chartState(all, 'test-trend')).type).toBe('line');
      expect(problems).toEqual([]);
      await all.screenshot({ path: path.join(OUTPUT, 'report-all-sources.png'), fullPage: true });
    });
  });
});

/**
 * The ledger as a bad night leaves it: the feedback and recordings windows of `failed` failed
 * before anything of the day was stored, and those of `truncated` reached the server's cap.
 */
async function markFailedAndTruncated(t: TestDatabase, failed: string, truncated: string): Promise<void> {
  for (const table of ['feedback', 'survey_answers', 'recordings'] as const)
    await sql`delete from ${sql.table(table)} where (dt at time zone 'UTC')::date = ${failed}::date`.execute(
      t.db,
    );
  await sql`update sync_windows set status = 'failed', item_count = 0, last_error = 'HTTP 503 from the API after 4 attempts'
            where day = ${failed} and resource in ('feedback', 'survey', 'recordings')`.execute(t.db);
  await sql`update sync_windows set truncated = true
            where day = ${truncated} and resource in ('feedback', 'survey', 'recordings')`.execute(t.db);
}

/**
 * The latest day from `latest` back to `earliest` on which feedback, survey and recordings have items:
 * the simulator leaves about one day in 14 empty, drawn from the calendar date, so a fixed offset
 * from today would be an empty day on some dates, and a truncated day's lower bound would be 0.
 */
async function latestDayWithItems(t: TestDatabase, latest: string, earliest: string): Promise<string> {
  const { rows } = await sql<{ day: string | null }>`
    select max(day)::text as day from (
      select day from sync_windows
      where source_id = 'main' and resource in ('feedback', 'survey', 'recordings')
        and day between ${earliest} and ${latest}
      group by day having count(*) filter (where item_count > 0) = 3) as days`.execute(t.db);
  const day = rows[0]?.day;
  if (day === null || day === undefined) throw new Error(`no day from ${earliest} to ${latest} has items`);
  return day;
}

/** A second source with a full ledger and three feedback items on two days, one comment hard to quote. */
async function addOtherSource(
  t: TestDatabase,
  range: { from: string; to: string },
  [first, second]: string[],
  hardComment: string,
): Promise<void> {
  await sql`insert into sources (source_id, base_url) values ('other', 'https://other.example')`.execute(
    t.db,
  );
  await sql`insert into sync_windows (source_id, resource, day, status)
            select 'other', r, d::date, case when d::date = ${range.to}::date then 'open' else 'done' end
            from unnest(array['feedback', 'survey', 'recordings']) as r,
                 generate_series(${range.from}::date, ${range.to}::date, interval '1 day') as d`.execute(
    t.db,
  );
  const item = (id: number, day: string | undefined, comment: string) =>
    sql`(${'other'}, ${id}, 1, 'How was it?', ${comment}, 3, ${`${day}T12:00:00.000Z`}::timestamptz,
         'https://other.example/a,b', '{}'::jsonb)`;
  await sql`insert into feedback (source_id, id, feedback_id, question, comment, rating, dt, url, raw)
            values ${sql.join([item(1, first, 'fine'), item(2, first, ''), item(3, second, hardComment)])}`.execute(
    t.db,
  );
}

async function countFeedback(t: TestDatabase, source: string, from: string, to: string): Promise<number> {
  const row = await t.db
    .selectFrom('feedback_enriched')
    .select(sql<number>`count(*)::int`.as('n'))
    .where('source_id', '=', source)
    .where('day', '>=', from)
    .where('day', '<=', to)
    .executeTakeFirstOrThrow();
  return row.n;
}

interface ChartState {
  type: string;
  labels: string[];
  yType: string | undefined;
  datasets: { label: string; data: (number | null)[]; mark?: string; markedDays?: string[] }[];
}

/** A chart as the page drew it: its Chart.js instance's data (window.reportCharts). */
function chartState(page: Page, name: string): Promise<ChartState> {
  return page.evaluate((name) => {
    const chart = (
      globalThis as unknown as {
        reportCharts: Record<
          string,
          {
            config: { type: string };
            options: { scales?: { y?: { type?: string } } };
            data: { labels: string[]; datasets: ChartState['datasets'] };
          }
        >;
      }
    ).reportCharts[name];
    if (!chart) throw new Error(`no chart ${name}`);
    return {
      type: chart.config.type,
      labels: [...chart.data.labels],
      yType: chart.options.scales?.y?.type,
      datasets: chart.data.datasets.map((d) => ({
        label: d.label,
        data: [...d.data],
        mark: d.mark,
        markedDays: d.markedDays,
      })),
    };
  }, name);
}

/**
 * At a viewport width, the table cells (with every <details> opened) whose right edge lies past
 * the content box of their card: a cell there is cut off, or hidden behind a sideways scroll.
 */
async function cellsPastTheirCard(page: Page, width: number): Promise<string[]> {
  await page.setViewportSize({ width, height: 900 });
  return page.evaluate(() => {
    interface Rect {
      right: number;
      width: number;
    }
    interface Element {
      textContent: string | null;
      open?: boolean;
      closest(selector: string): Element | null;
      querySelector(selector: string): Element | null;
      getBoundingClientRect(): Rect;
    }
    const win = globalThis as unknown as {
      document: { querySelectorAll(selector: string): ArrayLike<Element> };
      getComputedStyle(element: Element): { paddingRight: string; borderRightWidth: string };
    };
    for (const details of Array.from(win.document.querySelectorAll('details'))) details.open = true;
    const past: string[] = [];
    for (const cell of Array.from(win.document.querySelectorAll('table th, table td'))) {
      const box = cell.getBoundingClientRect();
      const card = cell.closest('section');
      if (box.width === 0 || card === null) continue;
      const style = win.getComputedStyle(card);
      const inside =
        card.getBoundingClientRect().right -
        parseFloat(style.paddingRight) -
        parseFloat(style.borderRightWidth);
      if (box.right > inside + 0.5)
        past.push(
          `${card.querySelector('h2')?.textContent}: "${cell.textContent?.trim()}" ends at ${Math.round(box.right)} px, the card's content at ${Math.round(inside)}`,
        );
    }
    return past;
  });
}

/** The text of each cell of the rows a table shows now. */
function visibleRows(page: Page, table: string): Promise<string[][]> {
  return page
    .locator(`${table} tbody tr:not([hidden])`)
    .evaluateAll((rows) =>
      rows.map((row) =>
        [...(row as unknown as { cells: Iterable<{ textContent: string }> }).cells].map((c) => c.textContent),
      ),
    );
}

async function waitForRedraw(page: Page, before?: string): Promise<void> {
  await page.waitForFunction(
    (seen) =>
      (globalThis as unknown as { document: { body: { dataset: { redraws?: string } } } }).document.body
        .dataset.redraws !== seen,
    before ?? null,
  );
}

/** Sets the page's filters as a reader would (each change redraws) and waits for the redraw. */
async function setFilter(page: Page, filter: { from?: string; to?: string; source?: string }): Promise<void> {
  const redraws = await page.getAttribute('body', 'data-redraws');
  const changed = await page.evaluate((filter) => {
    const doc = (
      globalThis as unknown as {
        document: { getElementById(id: string): { value: string; dispatchEvent(e: unknown): void } | null };
      }
    ).document;
    const EventType = (globalThis as unknown as { Event: new (type: string) => unknown }).Event;
    let changed = 0;
    for (const [id, value] of [
      ['filter-from', filter.from],
      ['filter-to', filter.to],
      ['filter-source', filter.source],
    ] as const) {
      const element = doc.getElementById(id);
      if (value === undefined || element === null || element.value === value) continue;
      element.value = value;
      element.dispatchEvent(new EventType('change'));
      changed++;
    }
    return changed;
  }, filter);
  if (changed > 0) await waitForRedraw(page, redraws ?? undefined);
}
