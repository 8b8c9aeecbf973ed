import { createHash } from 'node:crypto';
import { utcMinutes } from '../time/instant-text.js';
import { BREAKDOWN_ROWS, markRuns } from './browser/report-view.js';
import { PAGE_SCRIPT } from './page-script.generated.js';
import {
  COMMENT_CHARS,
  type DayMark,
  type FeedbackComment,
  type HealthRow,
  type NewField,
  type PageData,
  type ReportData,
  type VariantResult,
} from './report-data.js';
import type { Verification } from './verification-data.js';

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
    generated ${escapeHtml(utcMinutes(data.generatedAt))} UTC</p>
  ${filterBar(data)}
  <div class="tiles">
    ${tile('feedback items', 'feedback', data.totals.feedback)}
    ${tile('survey answers', 'surveyAnswers', data.totals.surveyAnswers)}
    ${tile('recordings', 'recordings', data.totals.recordings)}
    ${tile('running tests', 'tests', data.totals.tests)}
  </div>
</header>
<main>
${resultsSection('A/B tests', 'ab-results', data.abResults, data.sources.length > 1)}
${resultsSection('Personalization tests', 'personalization-results', data.personalizationResults, data.sources.length > 1)}
${trendSection(data)}
${gapsSection(data.dayMarks)}
<section>
  <h2>Feedback per day</h2>
  ${
    data.totals.feedback > 0
      ? `${chart('feedback-daily')}
  <p class="note">Ratings are averaged per question: the service does not document the rating scales, and questions may use different ones.
    ${MARKS_NOTE}</p>`
      : empty('No feedback in this range.')
  }
</section>
${breakdownSection(data)}
${commentsSection(data)}
<section>
  <h2>Survey answers</h2>
  ${
    data.totals.surveyAnswers > 0
      ? `<figure><figcaption>Survey answers per day</figcaption>${chart('survey-daily')}</figure>
  <p class="note">${MARKS_NOTE} The answers per question below count the loaded answers of those days too.</p>`
      : ''
  }
  ${
    data.survey.length > 0
      ? `<div class="grid">${data.survey
          .map(
            (
              q,
              i,
            ) => `<figure><figcaption>${escapeHtml(q.question)} <span class="count">(<span data-survey-total="${i}">${q.total}</span> answers)</span></figcaption>
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
  </div>
  <p class="note">${MARKS_NOTE}</p>`
      : empty('No recordings in this range.')
  }
</section>
${healthSection(data.health)}
${verificationSection(data.verification)}
${newFieldsSection(data.newFields)}
</main>
<footer>Made by insights-sync from the warehouse views (docs/warehouse.md). Statistics assume that a test result's
  <em>complete</em> counts goal completions among <em>total</em> visitors; the spec does not define them.
  Charts: Chart.js (MIT).</footer>
<script type="application/json" id="report-data">${jsonForScript(pageData(data))}</script>
<script>${chartJs}</script>
<script>${PAGE_SCRIPT}</script>
</body>
</html>
`;
}

/** The page's data without the comments: the comments table holds them (PageData). */
function pageData(data: ReportData): PageData {
  const { comments: _inTheTable, ...rest } = data;
  return rest;
}

const MARKS_NOTE =
  'Shaded days are not simply loaded (see "Days not fully loaded"): a failed or not-loaded day has no bar, its count is unknown; a truncated day, a day last fetched before it ended, and today while it is still open are drawn as "at least" their count.';

/**
 * Date range, source, and a log scale for the daily bars: the page script filters the embedded
 * rows and redraws (nothing is sent anywhere; the page has no server).
 */
function filterBar(data: ReportData): string {
  const { from, to } = data.range;
  const sources = data.sources
    .map((s) => `<option value="${escapeHtml(s)}">${escapeHtml(s)}</option>`)
    .join('');
  return `<div class="filters" id="filters">
    <label>From <input type="date" id="filter-from" value="${escapeHtml(from)}" min="${escapeHtml(from)}" max="${escapeHtml(to)}"></label>
    <label>to <input type="date" id="filter-to" value="${escapeHtml(to)}" min="${escapeHtml(from)}" max="${escapeHtml(to)}"></label>
    <label>Source <select id="filter-source">${data.sources.length > 1 ? '<option value="">all sources</option>' : ''}${sources}</select></label>
    <label><input type="checkbox" id="log-scale"> log scale for daily bars</label>
  </div>`;
}

const VERDICT_CLASS: Record<string, string> = { winner: 'win', loser: 'loss', untrustworthy: 'suspect' };

/**
 * A results table: one row per variant. With several sources a source column says whose test a
 * row is (two sources may run tests of the same name). Its 13 or 14 columns fit the card from
 * 1024 px up (class results in STYLE): intervals and "allocation unknown" may wrap at a space.
 */
function resultsSection(heading: string, name: string, rows: VariantResult[], manySources: boolean): string {
  if (rows.length === 0)
    return `<section><h2>${escapeHtml(heading)}</h2>${empty('No tests of this kind in the warehouse.')}</section>`;
  const body = rows
    .map((r) => {
      // The view's verdict alone colours the row: an untrustworthy test (SRM) is never a winner,
      // so a row never shows the SRM flag beside a green or red cell.
      const cls = VERDICT_CLASS[r.verdict ?? ''] ?? (r.isControl ? 'control' : '');
      const source = manySources ? `<td>${escapeHtml(r.source)}</td>` : '';
      return `<tr class="${cls}" data-source="${escapeHtml(r.source)}">${source}<td class="test">${escapeHtml(r.testName)}${
        r.verdict === 'untrustworthy' ? ' <span class="flag" title="sample ratio mismatch">SRM</span>' : ''
      }</td><td>${escapeHtml(r.variant)}</td>
        <td class="n">${r.total}</td><td class="n">${r.complete}</td>
        <td class="n">${pct(r.conversion)}</td><td class="n range">${interval(r.conversionLow, r.conversionHigh)}</td>
        <td class="n">${r.isControl ? 'control' : pct(r.absoluteLift, true)}</td>
        <td class="n range">${r.isControl ? '' : interval(r.liftLow, r.liftHigh, true)}</td>
        <td class="n">${r.relativeLift === null ? '–' : `${signed(r.relativeLift * 100, 1)}%`}</td>
        <td class="n">${pValue(r.pValue)}</td><td class="n">${pValue(r.pValueHolm)}</td>
        <td class="n range">${r.srmStatus?.startsWith('allocation ') ? escapeHtml(r.srmStatus) : pValue(r.srmPValue)}</td>
        <td>${r.verdict ?? (r.isControl ? 'control' : '–')}</td></tr>`;
    })
    .join('\n');
  return `<section>
  <h2>${escapeHtml(heading)}</h2>
  ${chart(name)}
  <div class="wide"><table class="results" data-csv="${escapeHtml(name)}">
    <thead><tr>${manySources ? '<th>source</th>' : ''}<th>test</th><th>variant</th><th>total</th><th>complete</th><th>conversion</th><th>95% interval</th>
      <th>lift (points)</th><th>95% interval of lift</th><th>relative lift</th><th>p-value</th><th>Holm p</th><th>SRM p</th><th>verdict</th></tr></thead>
    <tbody>${body}</tbody>
  </table></div>
  <p class="note">Green (winner): better than the control at the 5% level after Holm's adjustment for the test's several comparisons; red (loser): worse.
    Two-proportion z-test against the control; intervals are 95%. SRM (untrustworthy, yellow): the variants' totals are too far from the
    split declared in the config (p &lt; 0.001): do not trust any result of that test. The API gives no allocation: a test without a
    declared split is not checked (allocation unknown), nor one that names a weight for only some variants (allocation incomplete).</p>
</section>`;
}

function pValue(p: number | null): string {
  return p === null ? '–' : p < 0.0001 ? '&lt; 0.0001' : p.toFixed(4);
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
  <p class="note">One point per day a sync captured the results (test_result_daily); with a single day, one bar per variant.</p>
  <details><summary>The captured days of this test</summary>
  <div class="wide"><table data-csv="test-days" id="trend-table">
    <thead><tr><th>day</th><th>variant</th><th>total</th><th>complete</th><th>conversion</th><th>new visitors</th><th>new completions</th></tr></thead>
    <tbody></tbody>
  </table></div></details>
</section>`;
}

const STATUS_LABEL: Record<DayMark['status'], string> = {
  failed: 'failed',
  'not-loaded': 'not loaded',
  truncated: 'truncated',
  unfinished: 'fetched before the day ended',
  open: 'open (today)',
};

/** The ledger's days that are not done and complete: the same marks the daily charts shade, as runs of days. */
function gapsSection(marks: DayMark[]): string {
  const rows = markRuns(marks)
    .map(
      (
        m,
      ) => `<tr class="mark-${m.status}" data-source="${escapeHtml(m.source)}" data-from="${m.from}" data-to="${m.to}">
        <td>${m.from}</td><td>${m.to}</td><td class="n">${m.days}</td><td>${escapeHtml(m.source)}</td><td>${m.resource}</td>
        <td>${STATUS_LABEL[m.status]}</td><td>${escapeHtml(m.detail)}</td></tr>`,
    )
    .join('\n');
  return `<section>
  <h2>Days not fully loaded</h2>
  ${
    marks.length === 0
      ? empty('Every day of this range is loaded and complete.')
      : `<div class="scroll"><table data-csv="days-not-loaded" id="gaps-table">
    <thead><tr><th>from</th><th>to</th><th>days</th><th>source</th><th>resource</th><th>status</th><th>why</th></tr></thead>
    <tbody>${rows}</tbody>
  </table></div>
  <p class="note" id="gaps-empty" hidden>Every day of the chosen range and source is loaded and complete.</p>
  <p class="note">From the ledger (sync_windows): failed (the last fetch failed; the next run tries again), not loaded (no window),
    truncated (the API returned as many items as it allows: items may be missing), fetched before the day ended (its last fetch ran
    while the day was still going on: items may be missing; the next run fetches it again), open (today, fetched again by the next run).</p>`
  }
</section>`;
}

/** Feedback per page and per device: tables the page script fills for the filter. */
function breakdownSection(data: ReportData): string {
  if (data.byUrl.length === 0 && data.byDevice.length === 0)
    return `<section><h2>Feedback by page and device</h2>${empty('No feedback in this range.')}</section>`;
  const table = (id: string, what: string) => `<div class="wide"><table data-csv="${id}" id="${id}">
      <thead><tr><th>${what}</th><th>feedback</th><th>share</th><th>with a comment</th></tr></thead>
      <tbody></tbody>
    </table></div>`;
  return `<section>
  <h2>Feedback by page and device</h2>
  <div class="grid two">
    <figure><figcaption>By page (url), the ${BREAKDOWN_ROWS} with the most feedback</figcaption>${table('feedback-by-url', 'page')}</figure>
    <figure><figcaption>By device (the visitor's, as the service names it)</figcaption>${table('feedback-by-device', 'device')}</figure>
  </div>
</section>`;
}

function commentsSection(data: ReportData): string {
  if (data.comments.length === 0)
    return `<section><h2>Feedback comments</h2>${empty('No feedback comments in this range.')}</section>`;
  const rows = data.comments
    .map(
      (c) => `<tr data-source="${escapeHtml(c.source)}" data-day="${escapeHtml(c.day)}">
        <td class="when">${commentTime(c)}</td><td>${escapeHtml(c.source)}</td><td class="url">${escapeHtml(c.url ?? '')}</td>
        <td>${escapeHtml(c.question ?? '')}</td><td class="n">${c.rating ?? ''}</td><td>${escapeHtml(c.device ?? '')}</td>
        <td class="comment">${escapeHtml(c.comment)}${cutNote(c)}</td></tr>`,
    )
    .join('\n');
  const partial =
    data.commentCount > data.comments.length
      ? ` The ${data.comments.length} most recent of ${data.commentCount} comments in the range are in this page.`
      : '';
  return `<section>
  <h2>Feedback comments</h2>
  <label>Search <input type="search" id="comment-search" placeholder="text, page or question"></label>
  <span class="count" id="comment-count">${data.comments.length} comments</span>
  <div class="scroll"><table data-csv="feedback-comments" id="comments-table">
    <thead><tr><th>when</th><th>source</th><th>page</th><th>question</th><th>rating</th><th>device</th><th>comment</th></tr></thead>
    <tbody>${rows}</tbody>
  </table></div>
  <p class="note">The most recent first.${partial}</p>
</section>`;
}

/**
 * When a comment was given (HTML). A row only a webhook has delivered has no time (the webhook
 * body carries none): it says so, and names the day it counts on until the API's time replaces it.
 */
function commentTime(c: FeedbackComment): string {
  if (c.dt !== null) return escapeHtml(shortTime(c.dt));
  return `webhook only, not yet read from the API <span class="nowrap">(received ${escapeHtml(c.day)})</span>`;
}

/** What the reader sees at the end of a comment cut at COMMENT_CHARS. */
function cutNote(c: FeedbackComment): string {
  if (c.commentChars <= COMMENT_CHARS) return '';
  const count = (n: number) => n.toLocaleString('en-US');
  return `<span class="cut">… (cut at ${count(COMMENT_CHARS)} of ${count(c.commentChars)} characters)</span>`;
}

/** Only when there are some: a short note that the API sends more than the spec describes. */
function newFieldsSection(fields: NewField[]): string {
  if (fields.length === 0) return '';
  const rows = fields
    .map(
      (
        f,
      ) => `<tr data-source="${escapeHtml(f.source)}"><td>${escapeHtml(f.source)}</td><td>${escapeHtml(f.resource)}</td>
        <td><code>${escapeHtml(f.field)}</code></td><td>${escapeHtml(f.firstSeenDay)}</td><td>${escapeHtml(shortTime(f.lastSeenAt))}</td>
        <td class="n">${f.lastRunShare === null ? '–' : `${(f.lastRunShare * 100).toFixed(0)}%`}</td></tr>`,
    )
    .join('\n');
  return `<section>
  <h2>New fields from the API</h2>
  <p class="note">The API sends ${fields.length === 1 ? 'a field' : `${fields.length} fields`} the spec does not describe. They are kept in the <code>raw</code> column of each row, not in a column of their own (table schema_drift).</p>
  <div class="wide"><table data-csv="new-fields">
    <thead><tr><th>source</th><th>resource</th><th>field</th><th>first seen (day)</th><th>last seen</th><th>share of the last run's items</th></tr></thead>
    <tbody>${rows}</tbody>
  </table></div>
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
      : `<div class="wide"><table data-csv="sync-health">
    <thead><tr><th>source</th><th>resource</th><th>watermark</th><th>lag (days)</th><th>truncated days</th>
      <th>failed days</th><th>rejected items</th><th>last run</th><th>last loaded</th></tr></thead>
    <tbody>${body}</tbody>
  </table></div>
  <p class="note">Truncated days: the API returned as many items as it allows in one response, so items of those days may be missing.</p>`
  }
</section>`;
}

/**
 * The verifies (the `verify` command, the schedule's scrub): per source, how far they have got and
 * what the last 30 days' found; then the days whose last verify found a difference. Until a day is
 * verified, says so and how to start, rather than a table of zeros that reads as "all verified".
 */
function verificationSection(v: Verification): string {
  const heading = '<h2>Verification</h2>';
  if (v.sources.every((s) => s.lastVerifiedAt === null))
    return `<section>${heading}${empty(
      v.sources.length === 0
        ? 'Nothing settled yet: no day to verify.'
        : "No day verified yet — run `insights-sync verify` or let the schedule's scrub run.",
    )}</section>`;
  const sources = v.sources
    .map(
      (
        s,
      ) => `<tr data-source="${escapeHtml(s.source)}" class="${s.lacked > 0 ? 'attention' : ''}"><td>${escapeHtml(s.source)}</td>
        <td>${escapeHtml(shortTime(s.lastVerifiedAt))}</td><td>${escapeHtml(shortTime(s.leastRecentlyVerifiedAt))}</td>
        <td class="n">${s.neverVerified} of ${s.settled}</td><td>${escapeHtml(s.oldestUnverifiedDay ?? '–')}</td>
        <td class="n">${s.verifiedSince}</td><td class="n">${s.lacked}</td><td class="n">${s.changed}</td>
        <td class="n">${s.gone}</td><td class="n">${s.moved}</td></tr>`,
    )
    .join('\n');
  const days = v.differences
    .map(
      (
        d,
      ) => `<tr data-source="${escapeHtml(d.source)}" class="${d.lacked > 0 ? 'attention' : ''}"><td>${escapeHtml(d.source)}</td>
        <td>${escapeHtml(d.resource)}</td><td>${escapeHtml(d.day)}</td><td>${escapeHtml(shortTime(d.verifiedAt))}</td>
        <td class="n">${d.lacked}</td><td class="n">${d.changed}</td><td class="n">${d.gone}</td><td class="n">${d.moved}</td></tr>`,
    )
    .join('\n');
  const found = `<th>lacked</th><th>changed</th><th>gone</th><th>moved</th>`;
  return `<section>
  ${heading}
  <div class="wide"><table data-csv="verification">
    <thead><tr><th>source</th><th>last verified</th><th>least recently verified</th><th>settled days never verified</th>
      <th>oldest unverified day</th><th>verified, last ${v.periodDays} days</th>${found}</tr></thead>
    <tbody>${sources}</tbody>
  </table></div>
  <p class="note">A verify reads settled days again and repairs what differs. Lacked: items the warehouse did not have (stored now; the day had been loaded short); changed: stored versions that differed (rewritten); gone: rows the service no longer serves (marked missing upstream, kept); moved: items whose day changed. Counts per source are the last verify of each day verified in the last ${v.periodDays} days.</p>
  ${
    v.differences.length === 0
      ? empty('No verified day differed from what the service serves.')
      : `<div class="wide"><table data-csv="verification-differences">
    <thead><tr><th>source</th><th>resource</th><th>day</th><th>verified</th>${found}</tr></thead>
    <tbody>${days}</tbody>
  </table></div>`
  }
</section>`;
}

function chart(name: string, size: 'small' | 'large' = 'large'): string {
  return `<div class="chart ${size}"><canvas data-chart="${escapeHtml(name)}" role="img" aria-label="${escapeHtml(name)} chart"></canvas></div>`;
}

function tile(label: string, name: string, value: number): string {
  return `<div class="tile"><div class="value" data-tile="${name}">${value.toLocaleString('en-US')}</div><div class="label">${escapeHtml(label)}</div></div>`;
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
  return iso === null ? '–' : `${utcMinutes(iso)} UTC`;
}

/**
 * The page's policy: nothing from a network, and only the page's own inline scripts and style,
 * named by their SHA-256 (CSP level 2), run. No 'unsafe-inline': should a warehouse text ever
 * reach the page unescaped, an injected <script>, onerror= or style= does nothing. The hashes are
 * taken here, of the exact text between the tags, so a new Chart.js version needs no update. The
 * data block (type application/json) is not a script the browser runs: it needs no hash. Chart.js
 * sizes its canvases through element.style (the CSSOM), which style-src does not restrict.
 */
function contentSecurityPolicy(inline: { scripts: readonly string[]; styles: readonly string[] }): string {
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

function escapeHtml(text: string): string {
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
tr.suspect td { background: var(--warn); }
tr.attention td { background: var(--warn); }
label { display: inline-block; margin: 0 12px 8px 0; }
input { font: inherit; }
.filters { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 8px 16px 0; margin-top: 12px; position: sticky; top: 0; z-index: 1; }
.flag { background: #e15759; color: #fff; border-radius: 3px; padding: 0 4px; font-size: 11px; font-weight: 600; }
tr.mark-failed td { background: var(--loss); }
tr.mark-truncated td, tr.mark-unfinished td, tr.mark-open td { background: var(--warn); }
tr.mark-not-loaded td { background: #eef0f3; }
td.comment { white-space: pre-wrap; max-width: 420px; }
td.comment .cut { color: var(--muted); font-style: italic; }
td.url { word-break: break-all; max-width: 260px; }
/* A time fits on one line; a webhook-only row's longer note wraps instead of widening the column. */
td.when { min-width: 13em; max-width: 13em; }
.nowrap { white-space: nowrap; }
.scroll { max-height: 480px; overflow: auto; }
/* A table wider than its card scrolls inside it; a grid cell may shrink below its content's width. */
.wide { overflow-x: auto; }
.grid > * { min-width: 0; }
/* A results table has 13 or 14 columns: smaller type and padding, and an interval or "allocation
   unknown" wraps at its space, so that the verdict and SRM columns fit the card from 1024 px up. */
table.results { font-size: 12px; }
table.results th, table.results td { padding: 4px 4px; }
table.results td.range { white-space: normal; }
table.results td.test { min-width: 7em; }
button.csv { font: inherit; font-size: 12px; margin-top: 6px; }
details { margin-top: 8px; }
select { font: inherit; padding: 2px 4px; }
.empty { color: var(--muted); font-style: italic; }
footer { font-size: 12px; padding-bottom: 24px; }
`;
