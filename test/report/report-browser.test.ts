import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { sql } from 'kysely';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../../scripts/chromium.js';
import { chartJsSource } from '../../src/report/chart-library.js';
import { renderReportHtml } from '../../src/report/render-html.js';
import { loadReportData } from '../../src/report/report-data.js';
import type { Simulator } from '../../src/simulator/server.js';
import { cliEnv, runCli } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { fillReportWarehouse } from './report-warehouse.js';

/**
 * `insights-sync report` on a simulator-filled warehouse, opened in a real browser (Debian's
 * chromium through playwright-core): every chart is drawn and shows data, nothing is fetched
 * from a network, the console stays clean. The screenshot lands in test-output/report.png;
 * `npm run docs:report` copies it to docs/report.png for the README.
 */
const OUTPUT = path.resolve(import.meta.dirname, '../../test-output');
const REPORT = path.join(OUTPUT, 'report.html');
const SCREENSHOT = path.join(OUTPUT, 'report.png');

interface DrawnChart {
  name: string;
  type: string | null;
  points: number;
  /** Canvas pixels that are not transparent: a drawn chart has many. */
  painted: number;
}

describe('the HTML report, in a browser', () => {
  let t: TestDatabase;
  let sim: Simulator;
  let browser: Browser;
  let page: Page;
  let range: { from: string; to: string };
  const problems: string[] = [];
  const requests: string[] = [];

  beforeAll(async () => {
    t = await createTestDatabase();
    const filled = await fillReportWarehouse(t);
    sim = filled.sim;
    range = { from: filled.from, to: filled.to };
    await mkdir(OUTPUT, { recursive: true });
    browser = await launchChromium();
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

  it('has a sync health row per resource, all up to date', async () => {
    const rows = await page.locator('section:has(h2:text("Sync health")) tbody tr').allTextContents();
    expect(rows).toHaveLength(6);
    expect(await page.locator('section:has(h2:text("Sync health")) tr.attention').count()).toBe(0);
  });
});
