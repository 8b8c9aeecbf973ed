/**
 * The script of the report page: draws every chart from the JSON embedded in the page with
 * Chart.js (inlined before it, the global `Chart`), and redraws charts and tables when the
 * filters change (dates, source, log scale, test, comment search). Browser code: its own tsconfig
 * (DOM lib), bundled by `npm run build:report-script` into ../page-script.generated.ts, which the
 * page embeds. It never runs in Node; what it computes is in report-view.ts, which Node tests.
 *
 * A chart is drawn into each `<canvas data-chart="...">` the HTML has; render-html.ts leaves a
 * chart out (with a sentence saying why) when it would have no data. When all are drawn,
 * `document.body.dataset.chartsDrawn` holds their number, and `data-redraws` counts the redraws
 * the filters caused: the browser test waits for them.
 */
import type { ChartConfiguration, ChartData, Chart as ChartJs, Plugin, TooltipItem } from 'chart.js';
import type { WindowedResource } from '../../schemas/resource-names.js';
import type { DayStatus, FeedbackComment, PageData, TestDay, VariantResult } from '../report-data.js';
import { toCsv } from './csv.js';
import {
  activityTotals,
  BREAKDOWN_ROWS,
  breakdown,
  commentMatches,
  countsByKey,
  type DailySeries,
  dailyAverage,
  dailySeries,
  type ReportFilter,
  ratingLines,
  runInFilter,
  type TrendView,
  trendView,
} from './report-view.js';

declare const Chart: typeof ChartJs;

declare global {
  interface Window {
    /** The charts drawn, by name: the browser test reads them. */
    reportCharts: Record<string, ChartJs>;
  }
}

/** Chart.js keeps unknown dataset properties: the error bars and the rows behind the bars. */
interface ResultDataset {
  errorBars?: ([number, number] | null)[];
  rows?: (VariantResult | undefined)[];
}

/** A legend-only dataset of a daily chart: the days it names are shaded while it is shown. */
interface MarkDataset {
  mark?: DayStatus;
  markedDays?: string[];
}

const MARK_LABEL: Record<DayStatus, string> = {
  failed: 'failed day',
  'not-loaded': 'day not loaded',
  truncated: 'truncated day',
  unfinished: 'day fetched before it ended',
  open: 'today, still loading',
};

const data = JSON.parse(document.getElementById('report-data')?.textContent ?? 'null') as PageData;
const palette = [
  '#4e79a7',
  '#f28e2b',
  '#59a14f',
  '#e15759',
  '#76b7b2',
  '#edc948',
  '#b07aa1',
  '#ff9da7',
  '#9c755f',
  '#bab0ac',
];
const color = (i: number) => palette[i % palette.length] as string;
const percent = (value: number | null | undefined, digits = 1) =>
  value == null ? '–' : `${(value * 100).toFixed(digits)}%`;
const unique = <T>(values: T[]): T[] => [...new Set(values)];
const byId = <T extends HTMLElement>(id: string) => document.getElementById(id) as T | null;

/** Diagonal stripes: a marked day reads as "something is wrong here", not as a colour of data. */
function stripes(line: string, fill: string): CanvasPattern | string {
  const tile = document.createElement('canvas');
  tile.width = 8;
  tile.height = 8;
  const ctx = tile.getContext('2d');
  if (!ctx) return fill;
  ctx.fillStyle = fill;
  ctx.fillRect(0, 0, 8, 8);
  ctx.strokeStyle = line;
  ctx.lineWidth = 2;
  ctx.beginPath();
  ctx.moveTo(0, 8);
  ctx.lineTo(8, 0);
  ctx.moveTo(-2, 2);
  ctx.lineTo(2, -2);
  ctx.moveTo(6, 10);
  ctx.lineTo(10, 6);
  ctx.stroke();
  return ctx.createPattern(tile, 'repeat') ?? fill;
}
const MARK_FILL: Record<DayStatus, CanvasPattern | string> = {
  failed: stripes('rgba(225, 87, 89, 0.55)', 'rgba(225, 87, 89, 0.12)'),
  'not-loaded': stripes('rgba(120, 128, 140, 0.45)', 'rgba(120, 128, 140, 0.10)'),
  truncated: 'rgba(237, 201, 72, 0.28)',
  unfinished: 'rgba(176, 122, 161, 0.22)',
  open: 'rgba(118, 183, 178, 0.22)',
};

// 95% intervals drawn over bars: dataset.errorBars[i] = [low, high] in the units of the y axis.
const errorBars: Plugin = {
  id: 'errorBars',
  afterDatasetsDraw(chart) {
    const { ctx } = chart;
    const y = chart.scales.y;
    if (!y) return;
    chart.data.datasets.forEach((dataset, d) => {
      const bars = (dataset as ResultDataset).errorBars;
      if (!bars || !chart.isDatasetVisible(d)) return;
      chart.getDatasetMeta(d).data.forEach((element, i) => {
        const range = bars[i];
        if (!range || range[0] == null || range[1] == null) return;
        const bar = element as unknown as { x: number; width: number };
        drawErrorBar(ctx, bar, y.getPixelForValue(range[1]), y.getPixelForValue(range[0]));
      });
    });
  },
};
/** An interval as a vertical line with a whisker at each end, centred on the bar. */
function drawErrorBar(
  ctx: CanvasRenderingContext2D,
  bar: { x: number; width: number },
  top: number,
  bottom: number,
) {
  const half = Math.min(5, bar.width / 4);
  ctx.save();
  ctx.strokeStyle = '#222';
  ctx.lineWidth = 1.25;
  ctx.beginPath();
  ctx.moveTo(bar.x, top);
  ctx.lineTo(bar.x, bottom);
  ctx.moveTo(bar.x - half, top);
  ctx.lineTo(bar.x + half, top);
  ctx.moveTo(bar.x - half, bottom);
  ctx.lineTo(bar.x + half, bottom);
  ctx.stroke();
  ctx.restore();
}
// Marked days shaded across the whole plot, behind the bars: a gap that says why it is one.
const dayMarks: Plugin = {
  id: 'dayMarks',
  beforeDatasetsDraw(chart) {
    const x = chart.scales.x;
    const labels = chart.data.labels ?? [];
    if (!x || labels.length === 0) return;
    const { ctx, chartArea } = chart;
    const width = chartArea.width / labels.length;
    chart.data.datasets.forEach((dataset, d) => {
      const { mark, markedDays } = dataset as MarkDataset;
      if (!mark || !markedDays || !chart.isDatasetVisible(d)) return;
      ctx.save();
      ctx.fillStyle = MARK_FILL[mark];
      for (const day of markedDays) {
        const i = labels.indexOf(day);
        if (i < 0) continue;
        ctx.fillRect(x.getPixelForValue(i) - width / 2, chartArea.top, width, chartArea.height);
      }
      ctx.restore();
    });
  },
};

/** The page's look for every chart, and its two plugins. */
function setUpChartJs() {
  Chart.defaults.animation = false;
  Chart.defaults.maintainAspectRatio = false;
  Chart.defaults.font.family = getComputedStyle(document.body).fontFamily;
  Chart.defaults.plugins.legend.labels.boxWidth = 12;
  // Legend in dataset order (bars first), whatever the drawing order.
  Chart.defaults.plugins.legend.labels.sort = (a, b) => (a.datasetIndex ?? 0) - (b.datasetIndex ?? 0);
  Chart.register(errorBars, dayMarks);
}

const drawn: Record<string, ChartJs> = {};
function draw(name: string, config: ChartConfiguration) {
  const canvas = document.querySelector<HTMLCanvasElement>(`canvas[data-chart="${name}"]`);
  if (!canvas) return;
  drawn[name]?.destroy();
  drawn[name] = new Chart(canvas, config);
}
/** Replaces a chart's data (and scale options) in place; false when the chart is not on the page. */
function redraw(name: string, chartData: ChartData, change?: (chart: ChartJs) => void): boolean {
  const chart = drawn[name];
  if (!chart) return false;
  chart.data = chartData;
  change?.(chart);
  chart.update();
  return true;
}

// ---- the filters ----
const fromInput = byId<HTMLInputElement>('filter-from');
const toInput = byId<HTMLInputElement>('filter-to');
const sourceSelect = byId<HTMLSelectElement>('filter-source');
const logScale = byId<HTMLInputElement>('log-scale');
const clampDay = (value: string | undefined, fallback: string) =>
  !value || !/^\d{4}-\d{2}-\d{2}$/.test(value)
    ? fallback
    : value < data.range.from
      ? data.range.from
      : value > data.range.to
        ? data.range.to
        : value;
function currentFilter(): ReportFilter {
  let from = clampDay(fromInput?.value, data.range.from);
  let to = clampDay(toInput?.value, data.range.to);
  if (from > to) [from, to] = [to, from];
  const source = sourceSelect?.value ?? '';
  return { from, to, sources: source === '' ? data.sources : [source] };
}

// ---- test results ----
const testKey = (r: VariantResult) => JSON.stringify([r.source, r.testId]);
// The same key as the <option> values of the test selector (render-html.ts).
const trendKey = (r: TestDay) => JSON.stringify([r.testKind, r.source, r.testId]);
const manySources = data.sources.length > 1;
const testLabel = (r: VariantResult | undefined) =>
  r === undefined ? '' : (manySources ? `${r.source}: ` : '') + r.testName;

function resultsData(rows: VariantResult[]): ChartData {
  const tests = unique(rows.map(testKey));
  const variants = unique(
    [...rows.filter((r) => r.isControl), ...rows.filter((r) => !r.isControl)].map((r) => r.variant),
  );
  const find = (test: string, variant: string) =>
    rows.find((r) => testKey(r) === test && r.variant === variant);
  return {
    labels: tests.map((test) => testLabel(rows.find((r) => testKey(r) === test))),
    datasets: variants.map((variant, i) => ({
      label: variant,
      backgroundColor: color(i),
      data: tests.map((test) => {
        const r = find(test, variant);
        return r && r.conversion != null ? r.conversion * 100 : null;
      }),
      errorBars: tests.map((test): [number, number] | null => {
        const r = find(test, variant);
        return r && r.conversionLow != null && r.conversionHigh != null
          ? [r.conversionLow * 100, r.conversionHigh * 100]
          : null;
      }),
      rows: tests.map((test) => find(test, variant)),
    })),
  } as ChartData;
}
function resultsChart(name: string, rows: VariantResult[]) {
  const rowOf = (item: TooltipItem<'bar'>) => (item.dataset as ResultDataset).rows?.[item.dataIndex];
  draw(name, {
    type: 'bar',
    data: resultsData(rows),
    options: {
      scales: {
        y: { beginAtZero: true, title: { display: true, text: 'conversion (%) with 95% interval' } },
      },
      plugins: {
        tooltip: {
          callbacks: {
            label: (item) => conversionLabel(rowOf(item)),
            afterLabel: (item) => liftLabel(rowOf(item)),
          },
        },
      },
    },
  } as ChartConfiguration<'bar'> as ChartConfiguration);
}
/** A variant's bar in the tooltip: its conversion, interval and total. */
function conversionLabel(r: VariantResult | undefined): string {
  if (!r) return '';
  return `${r.variant}: ${percent(r.conversion, 2)} (${percent(r.conversionLow, 2)} – ${percent(
    r.conversionHigh,
    2,
  )}) of ${r.total}`;
}
/** Under it, a variant's lift over the control; nothing for the control. */
function liftLabel(r: VariantResult | undefined): string {
  if (!r || r.isControl || r.absoluteLift == null) return '';
  const p = r.pValueHolm ?? r.pValue;
  return `lift ${percent(r.absoluteLift, 2)} (${percent(r.liftLow, 2)} – ${percent(
    r.liftHigh,
    2,
  )}), Holm p = ${p == null ? '–' : p.toPrecision(3)}${r.sampleRatioMismatch ? ', SRM: suspect' : ''}`;
}

// Conversion per day of one test at a time; with one captured day, a bar per variant.
const trendSelect = byId<HTMLSelectElement>('trend-test');
function showTrend(filter: ReportFilter) {
  if (!trendSelect) return;
  const view = trendView(
    data.testDays.filter((r) => trendKey(r) === trendSelect.value),
    filter,
  );
  const single = view.days.length <= 1;
  const chartData = trendData(view, single);
  const type = single ? 'bar' : 'line';
  if ((drawn['test-trend']?.config as { type?: string } | undefined)?.type === type)
    redraw('test-trend', chartData);
  else
    draw('test-trend', {
      type,
      data: chartData,
      options: {
        plugins: { legend: { display: !single } },
        scales: {
          y: { beginAtZero: single, title: { display: true, text: 'conversion to date (%)' } },
        },
      },
    } as ChartConfiguration);
  fillTable(
    'trend-table',
    view.rows.map((r) => [
      r.day,
      r.variant,
      String(r.total),
      String(r.complete),
      percent(r.conversion, 2),
      r.totalIncrement == null ? '–' : String(r.totalIncrement),
      r.completeIncrement == null ? '–' : String(r.completeIncrement),
    ]),
  );
}
/** A line per variant over the days; with one day (`single`), a bar per variant. */
function trendData(view: TrendView, single: boolean): ChartData {
  return single
    ? {
        labels: view.variants,
        datasets: [
          {
            label: `conversion to date${view.days[0] ? ` on ${view.days[0]}` : ''} (%)`,
            data: view.conversion.map((values) => values[0] ?? null),
            backgroundColor: view.variants.map((_, i) => color(i)),
          },
        ],
      }
    : {
        labels: view.days,
        datasets: view.variants.map((variant, i) => ({
          label: variant,
          borderColor: color(i),
          backgroundColor: color(i),
          spanGaps: true,
          data: view.conversion[i] ?? [],
        })),
      };
}

// ---- the daily charts ----
/** Daily bars (a known count, or "at least" on a truncated or open day), lines on a right axis, marked days. */
function dailyData(
  series: DailySeries,
  bars: { label: string; color: string },
  lines: { label: string; color: string; data: (number | null)[] }[],
  rightAxis: string,
): ChartData {
  const marks = (['failed', 'not-loaded', 'truncated', 'unfinished', 'open'] as const)
    .map((mark) => ({ mark, days: series.days.filter((_, i) => series.marks[i] === mark) }))
    .filter((m) => m.days.length > 0);
  return {
    labels: series.days,
    datasets: [
      {
        type: 'bar',
        label: bars.label,
        data: series.counts,
        backgroundColor: bars.color,
        yAxisID: 'y',
        grouped: false,
        order: 2,
      },
      {
        type: 'bar',
        label: `${bars.label}, at least (day not fully loaded)`,
        data: series.atLeast,
        backgroundColor: stripes(bars.color, '#ffffff'),
        borderColor: bars.color,
        borderWidth: 1,
        yAxisID: 'y',
        grouped: false,
        order: 2,
        hidden: series.atLeast.every((v) => v === null),
      },
      ...lines.map((line) => ({
        type: 'line' as const,
        label: line.label,
        yAxisID: rightAxis,
        borderColor: line.color,
        backgroundColor: line.color,
        spanGaps: false,
        order: 1,
        data: line.data,
      })),
      ...marks.map((m) => ({
        type: 'bar' as const,
        label: MARK_LABEL[m.mark],
        data: series.days.map(() => null),
        backgroundColor: MARK_FILL[m.mark],
        borderColor: 'rgba(0, 0, 0, 0.25)',
        borderWidth: 1,
        yAxisID: 'y',
        grouped: false,
        mark: m.mark,
        markedDays: m.days,
      })),
    ],
  } as ChartData;
}
function dailyScale(title: string) {
  return logScale?.checked
    ? { type: 'logarithmic' as const, title: { display: true, text: `${title} (log scale)` } }
    : { type: 'linear' as const, beginAtZero: true, title: { display: true, text: title } };
}
function showDaily(
  name: string,
  chartData: ChartData,
  barsTitle: string,
  right?: { id: string; title: string },
) {
  const scales = {
    y: dailyScale(barsTitle),
    ...(right === undefined
      ? {}
      : {
          [right.id]: {
            position: 'right' as const,
            beginAtZero: true,
            grid: { drawOnChartArea: false },
            title: { display: true, text: right.title },
          },
        }),
  };
  const changed = redraw(name, chartData, (chart) => {
    chart.options.scales = scales;
  });
  if (!changed) draw(name, { type: 'bar', data: chartData, options: { scales } } as ChartConfiguration);
}

function showFeedback(filter: ReportFilter) {
  const series = dailySeries(data.activity, (a) => a.feedback, data.dayMarks, 'feedback', filter);
  const lines = ratingLines(data.ratings, series, filter).map((line, i) => ({
    label: `average rating: ${line.question}`,
    color: color(i + 1),
    data: line.data,
  }));
  showDaily(
    'feedback-daily',
    dailyData(series, { label: 'feedback items', color: '#9fb6d6' }, lines, 'rating'),
    'feedback items',
    { id: 'rating', title: 'average rating (scale per question)' },
  );
}

function showRecordings(filter: ReportFilter) {
  const resource: WindowedResource = 'recordings';
  const series = dailySeries(data.activity, (a) => a.recordings, data.dayMarks, resource, filter);
  const duration = dailyAverage(
    data.activity,
    (a) => a.recordings,
    (a) => a.averageDuration,
    series,
    filter,
  );
  showDaily(
    'recordings-daily',
    dailyData(
      series,
      { label: 'recordings', color: '#8cc47a' },
      [{ label: 'average duration', color: color(3), data: duration }],
      'duration',
    ),
    'recordings',
    { id: 'duration', title: 'average duration (unit not documented)' },
  );
}

// A failed or truncated survey day is marked as the feedback and recordings days are.
function showSurveyDaily(filter: ReportFilter) {
  const series = dailySeries(data.activity, (a) => a.surveyAnswers, data.dayMarks, 'survey', filter);
  showDaily(
    'survey-daily',
    dailyData(series, { label: 'survey answers', color: '#e0a96d' }, [], 'y'),
    'survey answers',
  );
}

// ---- survey answers and durations ----
function showSurvey(filter: ReportFilter) {
  data.survey.forEach((question, i) => {
    const answers = question.answers.map((a) => a.answer);
    const counts = countsByKey(
      data.surveyDays.filter((r) => r.questionId === question.questionId),
      (r) => r.answer,
      answers,
      filter,
    );
    const total = document.querySelector(`[data-survey-total="${i}"]`);
    if (total) total.textContent = String(counts.reduce((n, c) => n + c, 0));
    const chartData: ChartData = {
      labels: answers.map((a) => (a === '' ? '(empty)' : a)),
      datasets: [{ label: 'answers', data: counts, backgroundColor: color(i) }],
    };
    if (!redraw(`survey-${i}`, chartData))
      draw(`survey-${i}`, {
        type: 'bar',
        data: chartData,
        options: {
          indexAxis: 'y',
          plugins: { legend: { display: false } },
          scales: { x: { beginAtZero: true, ticks: { precision: 0 } } },
        },
      });
  });
}

// The "< 0" bin only when the data has one: durations are not expected to be negative.
const bins = data.durationLabels
  .map((_, bin) => bin)
  .filter((bin) => bin > 0 || data.durationDays.some((d) => d.bin === bin && d.count > 0));
function showDurations(filter: ReportFilter) {
  const chartData: ChartData = {
    labels: bins.map((bin) => data.durationLabels[bin] ?? ''),
    datasets: [
      {
        label: 'recordings',
        data: countsByKey(data.durationDays, (d) => d.bin, bins, filter),
        backgroundColor: color(2),
      },
    ],
  };
  if (!redraw('recording-durations', chartData))
    draw('recording-durations', {
      type: 'bar',
      data: chartData,
      options: {
        plugins: { legend: { display: false } },
        scales: {
          x: { title: { display: true, text: 'duration (the service does not document its unit)' } },
          y: { beginAtZero: true, ticks: { precision: 0 }, title: { display: true, text: 'recordings' } },
        },
      },
    });
}

// ---- tables ----
/** Replaces a table's body with rows of text cells (textContent: data stays text). */
function fillTable(id: string, rows: string[][]) {
  const body = byId<HTMLTableElement>(id)?.tBodies[0];
  if (!body) return;
  body.replaceChildren(
    ...rows.map((cells) => {
      const tr = document.createElement('tr');
      for (const text of cells) {
        const td = document.createElement('td');
        td.textContent = text;
        if (/^[-−+]?[\d.,]+%?$|^–$/.test(text)) td.className = 'n';
        tr.append(td);
      }
      return tr;
    }),
  );
}
/** Shows the rows of a server-written table that pass `keep` (by their data-source and data-day). */
function filterRows(table: HTMLTableElement | null, keep: (row: HTMLTableRowElement) => boolean): number {
  let shown = 0;
  for (const row of table?.tBodies[0]?.rows ?? []) {
    row.hidden = !keep(row);
    if (!row.hidden) shown++;
  }
  return shown;
}
const runIn = (row: HTMLTableRowElement, filter: ReportFilter) =>
  runInFilter(
    { source: row.dataset.source ?? '', from: row.dataset.from ?? '', to: row.dataset.to ?? '' },
    filter,
  );

const commentSearch = byId<HTMLInputElement>('comment-search');
/**
 * The comments are in the page once, as the table's rows (render-html.ts): the search reads
 * them back from the cells, the comment without the note saying where it was cut.
 */
const rowComment = (row: HTMLTableRowElement): FeedbackComment => {
  const cell = (i: number) => row.cells[i]?.textContent ?? '';
  return {
    source: row.dataset.source ?? '',
    day: row.dataset.day ?? '',
    dt: '',
    url: cell(2),
    question: cell(3),
    rating: null,
    device: null,
    comment: row.querySelector('td.comment')?.firstChild?.textContent ?? '',
    commentChars: 0,
  };
};
function showComments(filter: ReportFilter) {
  const table = byId<HTMLTableElement>('comments-table');
  const rows = table?.tBodies[0]?.rows;
  if (!rows) return;
  const search = commentSearch?.value ?? '';
  const shown = filterRows(table, (row) => commentMatches(rowComment(row), filter, search));
  const count = byId('comment-count');
  if (count) count.textContent = `${shown} of ${rows.length} comments`;
}

function showBreakdowns(filter: ReportFilter) {
  for (const [id, rows] of [
    ['feedback-by-url', data.byUrl],
    ['feedback-by-device', data.byDevice],
  ] as const)
    fillTable(
      id,
      breakdown(rows, filter, BREAKDOWN_ROWS).map((r) => [
        r.key,
        String(r.feedback),
        `${(r.share * 100).toFixed(1)}%`,
        String(r.comments),
      ]),
    );
}

function showTiles(filter: ReportFilter) {
  const totals = activityTotals(data.activity, filter);
  const tests = new Set(
    [...data.abResults, ...data.personalizationResults]
      .filter((r) => filter.sources.includes(r.source))
      .map((r) => `${r.source}/${r.testId}`),
  ).size;
  for (const [name, value] of Object.entries({ ...totals, tests })) {
    const tile = document.querySelector(`[data-tile="${name}"]`);
    if (tile) tile.textContent = value.toLocaleString('en-US');
  }
}

// CSV of what a table shows now (its visible rows), downloaded from a link the page makes.
function tableCsv(table: HTMLTableElement): string {
  const rows = [...table.rows].filter((row) => !row.hidden);
  // Numeric cells (class n) hold the page's own formatting, such as "+15.55 to +19.26".
  return toCsv(
    rows.map((row) => [...row.cells].map((cell) => cell.textContent ?? '')),
    (r, c) => rows[r]?.cells[c]?.classList.contains('n') === true,
  );
}
/** A "Download CSV" button after the table (or its box), saving the rows it shows at the time. */
function addCsvButton(table: HTMLTableElement) {
  const button = document.createElement('button');
  button.type = 'button';
  button.className = 'csv';
  button.textContent = 'Download CSV';
  button.dataset.csvFor = table.dataset.csv;
  button.addEventListener('click', () => {
    const link = document.createElement('a');
    // A byte order mark: spreadsheets then read the file as UTF-8.
    link.href = URL.createObjectURL(
      new Blob(['\ufeff', tableCsv(table)], { type: 'text/csv;charset=utf-8' }),
    );
    link.download = `${table.dataset.csv ?? 'table'}.csv`;
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(link.href), 60_000);
  });
  (table.closest('details, .scroll') ?? table).after(button);
}

// ---- everything, for the current filter ----
let redraws = 0;
function showAll() {
  const filter = currentFilter();
  showTiles(filter);
  showResults(filter);
  showTrend(filter);
  showGaps(filter);
  showFeedback(filter);
  showBreakdowns(filter);
  showComments(filter);
  if (data.totals.surveyAnswers > 0) showSurveyDaily(filter);
  showSurvey(filter);
  showRecordings(filter);
  showDurations(filter);
  window.reportCharts = drawn;
  document.body.dataset.redraws = String(redraws++);
}
/** The results charts and tables of the sources chosen. */
function showResults(filter: ReportFilter) {
  const sourceOf = (r: VariantResult) => filter.sources.includes(r.source);
  redraw('ab-results', resultsData(data.abResults.filter(sourceOf)));
  redraw('personalization-results', resultsData(data.personalizationResults.filter(sourceOf)));
  for (const table of document.querySelectorAll<HTMLTableElement>(
    'table[data-csv="ab-results"], table[data-csv="personalization-results"]',
  ))
    filterRows(table, (row) => filter.sources.includes(row.dataset.source ?? ''));
}
/** The table of days not simply loaded: its rows in the filter, or the sentence saying there are none. */
function showGaps(filter: ReportFilter) {
  const gaps = byId<HTMLTableElement>('gaps-table');
  const gapsShown = filterRows(gaps, (row) => runIn(row, filter));
  const gapsEmpty = byId('gaps-empty');
  if (gapsEmpty) gapsEmpty.hidden = gapsShown > 0;
}

// ---- the page, drawn once and again at each change of a filter ----
setUpChartJs();
resultsChart('ab-results', data.abResults);
resultsChart('personalization-results', data.personalizationResults);
for (const table of document.querySelectorAll<HTMLTableElement>('table[data-csv]')) addCsvButton(table);
showAll();
for (const control of [fromInput, toInput, sourceSelect, logScale, trendSelect])
  control?.addEventListener('change', showAll);
commentSearch?.addEventListener('input', () => showComments(currentFilter()));

document.body.dataset.chartsDrawn = String(Object.keys(drawn).length);
