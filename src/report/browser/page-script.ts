/**
 * The script of the report page: draws every chart from the JSON embedded in the page with
 * Chart.js (inlined before it, the global `Chart`). Browser code: its own tsconfig (DOM lib),
 * bundled by `npm run build:report-script` into ../page-script.generated.ts, which the page
 * embeds. It never runs in Node.
 *
 * A chart is drawn into each `<canvas data-chart="...">` the HTML has; render-html.ts leaves a
 * chart out (with a sentence saying why) when it would have no data. When all are drawn,
 * `document.body.dataset.chartsDrawn` holds their number: the browser test waits for it.
 */
import type { ChartConfiguration, ChartData, Chart as ChartJs, Plugin, TooltipItem } from 'chart.js';
import type { ReportData, TestDay, VariantResult } from '../report-data.js';

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

(() => {
  const data = JSON.parse(document.getElementById('report-data')?.textContent ?? 'null') as ReportData;
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

  Chart.defaults.animation = false;
  Chart.defaults.maintainAspectRatio = false;
  Chart.defaults.font.family = getComputedStyle(document.body).fontFamily;
  Chart.defaults.plugins.legend.labels.boxWidth = 12;
  // Legend in dataset order (bars first), whatever the drawing order.
  Chart.defaults.plugins.legend.labels.sort = (a, b) => (a.datasetIndex ?? 0) - (b.datasetIndex ?? 0);

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
          const top = y.getPixelForValue(range[1]);
          const bottom = y.getPixelForValue(range[0]);
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
        });
      });
    },
  };
  Chart.register(errorBars);

  const drawn: Record<string, ChartJs> = {};
  function draw(name: string, config: ChartConfiguration) {
    const canvas = document.querySelector<HTMLCanvasElement>(`canvas[data-chart="${name}"]`);
    if (canvas) drawn[name] = new Chart(canvas, config);
  }

  // Every day of the range, so days without activity show as gaps, not as missing days.
  const days: string[] = [];
  for (
    let day = new Date(`${data.range.from}T00:00:00Z`);
    day <= new Date(`${data.range.to}T00:00:00Z`);
    day.setUTCDate(day.getUTCDate() + 1)
  )
    days.push(day.toISOString().slice(0, 10));
  const testKey = (r: VariantResult) => JSON.stringify([r.source, r.testId]);
  // The same key as the <option> values of the test selector (render-html.ts).
  const trendKey = (r: TestDay) => JSON.stringify([r.testKind, r.source, r.testId]);
  const manySources = data.sources.length > 1;
  const testLabel = (r: VariantResult | undefined) =>
    r === undefined ? '' : (manySources ? `${r.source}: ` : '') + r.testName;

  function resultsChart(name: string, rows: VariantResult[]) {
    const tests = unique(rows.map(testKey));
    const variants = unique(
      [...rows.filter((r) => r.isControl), ...rows.filter((r) => !r.isControl)].map((r) => r.variant),
    );
    const find = (test: string, variant: string) =>
      rows.find((r) => testKey(r) === test && r.variant === variant);
    const rowOf = (item: TooltipItem<'bar'>) => (item.dataset as ResultDataset).rows?.[item.dataIndex];
    draw(name, {
      type: 'bar',
      data: {
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
      },
      options: {
        scales: {
          y: { beginAtZero: true, title: { display: true, text: 'conversion (%) with 95% interval' } },
        },
        plugins: {
          tooltip: {
            callbacks: {
              label(item) {
                const r = rowOf(item);
                if (!r) return '';
                return `${r.variant}: ${percent(r.conversion, 2)} (${percent(r.conversionLow, 2)} – ${percent(
                  r.conversionHigh,
                  2,
                )}) of ${r.total}`;
              },
              afterLabel(item) {
                const r = rowOf(item);
                if (!r || r.isControl || r.absoluteLift == null) return '';
                return `lift ${percent(r.absoluteLift, 2)} (${percent(r.liftLow, 2)} – ${percent(
                  r.liftHigh,
                  2,
                )}), p = ${r.pValue == null ? '–' : r.pValue.toPrecision(3)}`;
              },
            },
          },
        },
      },
    } as ChartConfiguration<'bar'> as ChartConfiguration);
  }
  resultsChart('ab-results', data.abResults);
  resultsChart('personalization-results', data.personalizationResults);

  // Conversion per day of one test at a time; the selector switches tests.
  const select = document.getElementById('trend-test') as HTMLSelectElement | null;
  function trendConfig(key: string): ChartData<'line', (number | null)[], string> {
    const rows = data.testDays.filter((r) => trendKey(r) === key);
    const trendDays = unique(rows.map((r) => r.day)).sort();
    const variants = unique(
      [...rows.filter((r) => r.variant.toLowerCase() === 'control'), ...rows].map((r) => r.variant),
    );
    return {
      labels: trendDays,
      datasets: variants.map((variant, i) => ({
        label: variant,
        borderColor: color(i),
        backgroundColor: color(i),
        spanGaps: true,
        data: trendDays.map((day) => {
          const r = rows.find((x) => x.day === day && x.variant === variant);
          return r && r.conversion != null ? r.conversion * 100 : null;
        }),
      })),
    };
  }
  if (select) {
    draw('test-trend', {
      type: 'line',
      data: trendConfig(select.value),
      options: { scales: { y: { title: { display: true, text: 'conversion to date (%)' } } } },
    } as ChartConfiguration<'line'> as ChartConfiguration);
    select.addEventListener('change', () => {
      const chart = drawn['test-trend'];
      if (!chart) return;
      chart.data = trendConfig(select.value) as ChartData;
      chart.update();
    });
  }

  const activity = (field: 'feedback' | 'recordings') =>
    days.map((day) => {
      const a = data.activity.find((x) => x.day === day);
      return a ? a[field] : 0;
    });
  /** Daily bars on the left axis, lines on a second axis on the right. */
  function dailyBarsAndLines(
    name: string,
    bars: { label: string; data: number[]; color: string },
    lines: { label: string; color: string; data: (number | null)[] }[],
    right: { id: string; title: string },
  ) {
    draw(name, {
      type: 'bar',
      data: {
        labels: days,
        datasets: [
          {
            type: 'bar',
            label: bars.label,
            data: bars.data,
            backgroundColor: bars.color,
            yAxisID: 'y',
            order: 2,
          },
          ...lines.map((line) => ({
            type: 'line' as const,
            label: line.label,
            yAxisID: right.id,
            borderColor: line.color,
            backgroundColor: line.color,
            spanGaps: true,
            order: 1,
            data: line.data,
          })),
        ],
      },
      options: {
        scales: {
          y: { beginAtZero: true, title: { display: true, text: bars.label } },
          [right.id]: {
            position: 'right',
            beginAtZero: true,
            grid: { drawOnChartArea: false },
            title: { display: true, text: right.title },
          },
        },
      },
    } as ChartConfiguration<'bar' | 'line'> as ChartConfiguration);
  }

  const questions = unique(data.ratings.map((r) => r.question));
  dailyBarsAndLines(
    'feedback-daily',
    { label: 'feedback items', data: activity('feedback'), color: '#c9d6e8' },
    questions.map((question, i) => ({
      label: `average rating: ${question}`,
      color: color(i + 1),
      data: days.map((day) => {
        const r = data.ratings.find((x) => x.day === day && x.question === question);
        return r && r.averageRating != null ? r.averageRating : null;
      }),
    })),
    { id: 'rating', title: 'average rating (scale per question)' },
  );

  data.survey.forEach((question, i) => {
    draw(`survey-${i}`, {
      type: 'bar',
      data: {
        labels: question.answers.map((a) => (a.answer === '' ? '(empty)' : a.answer)),
        datasets: [
          { label: 'answers', data: question.answers.map((a) => a.count), backgroundColor: color(i) },
        ],
      },
      options: {
        indexAxis: 'y',
        plugins: { legend: { display: false } },
        scales: { x: { beginAtZero: true, ticks: { precision: 0 } } },
      },
    });
  });

  dailyBarsAndLines(
    'recordings-daily',
    { label: 'recordings', data: activity('recordings'), color: '#b6d7a8' },
    [
      {
        label: 'average duration',
        color: color(3),
        data: days.map((day) => {
          const a = data.activity.find((x) => x.day === day);
          return a && a.averageDuration != null ? a.averageDuration : null;
        }),
      },
    ],
    { id: 'duration', title: 'average duration (unit not documented)' },
  );

  draw('recording-durations', {
    type: 'bar',
    data: {
      labels: data.durations.map((b) => b.label),
      datasets: [
        { label: 'recordings', data: data.durations.map((b) => b.count), backgroundColor: color(2) },
      ],
    },
    options: {
      plugins: { legend: { display: false } },
      scales: {
        x: { title: { display: true, text: 'duration (the service does not document its unit)' } },
        y: { beginAtZero: true, ticks: { precision: 0 }, title: { display: true, text: 'recordings' } },
      },
    },
  });

  window.reportCharts = drawn;
  document.body.dataset.chartsDrawn = String(Object.keys(drawn).length);
})();
