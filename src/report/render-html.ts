import { createHash } from 'node:crypto';
import { PAGE_SCRIPT } from './page-script.generated.js';
import type { HealthRow, ReportData, VariantResult } from './report-data.js';

/**
 * The report as one self-contained HTML page: styles, Chart.js, the data (JSON) and the script
 * are all inline, and a Content-Security-Policy forbids every network request, so it opens the
 * same from a file, a mail attachment or an intranet, offline.
 *
 * Tables are HTML (readable without scripts, searchable); charts are drawn by the page script.
 * Every text that comes from the warehouse is escaped: test names and answers are visitor or
 * customer input.
 */
export function renderReportHtml(data: ReportData, chartJs: string): string {
  const title = `Website Insights report, ${data.range.from} to ${data.range.to}`;
  const csp = contentSecurityPolicy({ scripts: [chartJs, PAGE_SCRIPT], styles: [STYLE] });
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
</head>
<body>
<header>
  <h1>Website Insights report</h1>
  <p class="meta">${escapeHtml(data.range.from)} to ${escapeHtml(data.range.to)} (UTC days) ·
    source${data.sources.length === 1 ? '' : 's'}: ${escapeHtml(data.sources.join(', ') || 'none')} ·
    generated ${escapeHtml(data.generatedAt.replace('T', ' ').slice(0, 16))} UTC</p>
  <div class="tiles">
    ${tile('feedback items', data.totals.feedback)}
    ${tile('survey answers', data.totals.surveyAnswers)}
    ${tile('recordings', data.totals.recordings)}
    ${tile('running tests', data.totals.tests)}
  </div>
</header>
<main>
${resultsSection('A/B tests', 'ab-results', data.abResults)}
${resultsSection('Personalization tests', 'personalization-results', data.personalizationResults)}
${trendSection(data)}
<section>
  <h2>Feedback per day</h2>
  ${
    data.totals.feedback > 0
      ? `${chart('feedback-daily')}
  <p class="note">Ratings are averaged per question: the service does not document the rating scales, and questions may use different ones.</p>`
      : empty('No feedback in this range.')
  }
</section>
<section>
  <h2>Survey answers per question</h2>
  ${
    data.survey.length > 0
      ? `<div class="grid">${data.survey
          .map(
            (
              q,
              i,
            ) => `<figure><figcaption>${escapeHtml(q.question)} <span class="count">(${q.total} answers)</span></figcaption>
      ${chart(`survey-${i}`, 'small')}</figure>`,
          )
          .join('\n      ')}</div>`
      : empty('No survey answers in this range.')
  }
</section>
<section>
  <h2>Recordings</h2>
  ${
    data.totals.recordings > 0
      ? `<div class="grid two">
    <figure><figcaption>Recordings per day</figcaption>${chart('recordings-daily')}</figure>
    <figure><figcaption>Duration distribution</figcaption>${chart('recording-durations')}</figure>
  </div>`
      : empty('No recordings in this range.')
  }
</section>
${healthSection(data.health)}
</main>
<footer>Made by insights-sync from the warehouse views (docs/warehouse.md). Statistics assume that a test result's
  <em>complete</em> counts goal completions among <em>total</em> visitors; the spec does not define them.
  Charts: Chart.js (MIT).</footer>
<script type="application/json" id="report-data">${jsonForScript(data)}</script>
<script>${chartJs}</script>
<script>${PAGE_SCRIPT}</script>
</body>
</html>
`;
}

function resultsSection(heading: string, name: string, rows: VariantResult[]): string {
  if (rows.length === 0)
    return `<section><h2>${escapeHtml(heading)}</h2>${empty('No tests of this kind in the warehouse.')}</section>`;
  const body = rows
    .map((r) => {
      const significant = r.pValue !== null && r.pValue < 0.05;
      const cls = r.isControl ? 'control' : significant ? ((r.absoluteLift ?? 0) > 0 ? 'win' : 'loss') : '';
      return `<tr class="${cls}"><td>${escapeHtml(r.testName)}</td><td>${escapeHtml(r.variant)}</td>
        <td class="n">${r.total}</td><td class="n">${r.complete}</td>
        <td class="n">${pct(r.conversion)}</td><td class="n">${interval(r.conversionLow, r.conversionHigh)}</td>
        <td class="n">${r.isControl ? 'control' : pct(r.absoluteLift, true)}</td>
        <td class="n">${r.isControl ? '' : interval(r.liftLow, r.liftHigh, true)}</td>
        <td class="n">${r.relativeLift === null ? '–' : `${signed(r.relativeLift * 100, 1)}%`}</td>
        <td class="n">${r.pValue === null ? '–' : r.pValue < 0.0001 ? '&lt; 0.0001' : r.pValue.toFixed(4)}</td></tr>`;
    })
    .join('\n');
  return `<section>
  <h2>${escapeHtml(heading)}</h2>
  ${chart(name)}
  <table>
    <thead><tr><th>test</th><th>variant</th><th>total</th><th>complete</th><th>conversion</th><th>95% interval</th>
      <th>lift (points)</th><th>95% interval of lift</th><th>relative lift</th><th>p-value</th></tr></thead>
    <tbody>${body}</tbody>
  </table>
  <p class="note">Green: better than the control at the 5% level; red: worse. Two-proportion z-test against the control; intervals are 95%.</p>
</section>`;
}

function trendSection(data: ReportData): string {
  const tests = new Map<string, string>();
  for (const r of data.testDays) {
    const kind = r.testKind === 'abtesting' ? 'A/B' : 'personalization';
    const source = data.sources.length > 1 ? `${r.source}: ` : '';
    // The page script finds a test's days by this key (trendKey in browser/page-script.ts).
    tests.set(JSON.stringify([r.testKind, r.source, r.testId]), `${kind}: ${source}${r.testName}`);
  }
  if (tests.size === 0)
    return `<section><h2>Test results day by day</h2>${empty('No test results were captured in this range.')}</section>`;
  const options = [...tests]
    .map(([key, label]) => `<option value="${escapeHtml(key)}">${escapeHtml(label)}</option>`)
    .join('');
  return `<section>
  <h2>Test results day by day</h2>
  <label>Test <select id="trend-test">${options}</select></label>
  ${chart('test-trend')}
  <p class="note">One point per day a sync captured the results (test_result_daily).</p>
</section>`;
}

function healthSection(rows: HealthRow[]): string {
  const body = rows
    .map((h) => {
      const attention =
        (h.lagDays ?? 0) > 1 ||
        h.truncatedDays > 0 ||
        h.failedDays > 0 ||
        h.rejectedItems > 0 ||
        (h.lastRunStatus !== null && h.lastRunStatus !== 'ok');
      return `<tr class="${attention ? 'attention' : ''}"><td>${escapeHtml(h.source)}</td><td>${escapeHtml(h.resource)}</td>
        <td>${escapeHtml(h.watermark ?? (h.kind === 'snapshot' ? 'snapshot' : 'none'))}</td>
        <td class="n">${h.lagDays ?? '–'}</td>
        <td class="n">${h.truncatedDays}${h.lastTruncatedDay ? ` (last ${escapeHtml(h.lastTruncatedDay)})` : ''}</td>
        <td class="n">${h.failedDays}</td><td class="n">${h.rejectedItems}</td>
        <td>${escapeHtml(h.lastRunStatus ?? '–')}</td><td>${escapeHtml(shortTime(h.lastLoadedAt))}</td></tr>`;
    })
    .join('\n');
  return `<section>
  <h2>Sync health</h2>
  ${
    rows.length === 0
      ? empty('Nothing loaded yet.')
      : `<table>
    <thead><tr><th>source</th><th>resource</th><th>watermark</th><th>lag (days)</th><th>truncated days</th>
      <th>failed days</th><th>rejected items</th><th>last run</th><th>last loaded</th></tr></thead>
    <tbody>${body}</tbody>
  </table>
  <p class="note">Truncated days: the API returned as many items as it allows in one response, so items of those days may be missing.</p>`
  }
</section>`;
}

function chart(name: string, size: 'small' | 'large' = 'large'): string {
  return `<div class="chart ${size}"><canvas data-chart="${escapeHtml(name)}" role="img" aria-label="${escapeHtml(name)} chart"></canvas></div>`;
}

function tile(label: string, value: number): string {
  return `<div class="tile"><div class="value">${value.toLocaleString('en-US')}</div><div class="label">${escapeHtml(label)}</div></div>`;
}

function empty(text: string): string {
  return `<p class="empty">${escapeHtml(text)}</p>`;
}

function pct(value: number | null, sign = false): string {
  if (value === null) return '–';
  return sign ? `${signed(value * 100, 2)}` : `${(value * 100).toFixed(2)}%`;
}

function interval(low: number | null, high: number | null, sign = false): string {
  if (low === null || high === null) return '–';
  return sign
    ? `${signed(low * 100, 2)} to ${signed(high * 100, 2)}`
    : `${(low * 100).toFixed(2)}–${(high * 100).toFixed(2)}%`;
}

function signed(value: number, digits: number): string {
  return `${value > 0 ? '+' : value < 0 ? '−' : ''}${Math.abs(value).toFixed(digits)}`;
}

function shortTime(iso: string | null): string {
  return iso === null ? '–' : `${iso.slice(0, 16).replace('T', ' ')} UTC`;
}

/**
 * The page's policy: nothing from a network, and only the page's own inline scripts and style,
 * named by their SHA-256 (CSP level 2), run. No 'unsafe-inline': should a warehouse text ever
 * reach the page unescaped, an injected <script>, onerror= or style= does nothing. The hashes are
 * taken here, of the exact text between the tags, so a new Chart.js version needs no update. The
 * data block (type application/json) is not a script the browser runs: it needs no hash. Chart.js
 * sizes its canvases through element.style (the CSSOM), which style-src does not restrict.
 */
export function contentSecurityPolicy(inline: {
  scripts: readonly string[];
  styles: readonly string[];
}): string {
  const hashes = (texts: readonly string[]) =>
    texts.map((text) => `'sha256-${sha256Base64(text)}'`).join(' ');
  return [
    "default-src 'none'",
    `script-src ${hashes(inline.scripts)}`,
    `style-src ${hashes(inline.styles)}`,
    'img-src data:',
    "base-uri 'none'",
    "form-action 'none'",
  ].join('; ');
}

function sha256Base64(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('base64');
}

export function escapeHtml(text: string): string {
  return text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;');
}

/** JSON inside <script>: no `</script>` or `<!--` can end it, and no line separator breaks it. */
function jsonForScript(value: unknown): string {
  return JSON.stringify(value)
    .replaceAll('<', '\\u003c')
    .replaceAll('>', '\\u003e')
    .replaceAll('&', '\\u0026')
    .replaceAll('\u2028', '\\u2028')
    .replaceAll('\u2029', '\\u2029');
}

const STYLE = `
:root { --ink: #1f2933; --muted: #616e7c; --line: #e4e7eb; --win: #e3f4e1; --loss: #fbe3e3; --warn: #fff4d6; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: var(--ink); background: #f7f8fa; }
header, main, footer { max-width: 1200px; margin: 0 auto; padding: 0 24px; }
header { padding-top: 24px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 0 0 12px; }
.meta, .note, footer, .count { color: var(--muted); }
.note { font-size: 12px; margin: 8px 0 0; }
.tiles { display: grid; grid-template-columns: repeat(4, 1fr); gap: 12px; margin: 16px 0; }
.tile { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 12px 16px; }
.tile .value { font-size: 26px; font-weight: 600; }
.tile .label { color: var(--muted); }
section { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 16px 20px; margin: 0 0 16px; }
.chart { position: relative; height: 320px; }
.chart.small { height: 190px; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(340px, 1fr)); gap: 16px; }
.grid.two { grid-template-columns: 1fr 1fr; }
figure { margin: 0; }
figcaption { font-weight: 600; margin-bottom: 4px; }
table { border-collapse: collapse; width: 100%; margin-top: 12px; font-size: 13px; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { color: var(--muted); font-weight: 600; }
td.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.control td { color: var(--muted); }
tr.win td { background: var(--win); }
tr.loss td { background: var(--loss); }
tr.attention td { background: var(--warn); }
label { display: inline-block; margin-bottom: 8px; }
select { font: inherit; padding: 2px 4px; }
.empty { color: var(--muted); font-style: italic; }
footer { font-size: 12px; padding-bottom: 24px; }
`;
