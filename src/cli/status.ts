import type { Command } from 'commander';
import { Option } from 'commander';
import { describeHolderOnly } from '../db/lock-holder.js';
import { CliError } from '../errors.js';
import type { VerifyProgress } from '../ledger/read.js';
import { oneLine, printOut, printProse, terminalColumns } from '../log/terminal-text.js';
import { isSnapshot, WINDOWED_RESOURCES } from '../schemas/resource-names.js';
import type { QueueStatus } from '../status/queue-status.js';
import { describeReadingChange } from '../status/reading-history.js';
import type { SourceRun } from '../status/source-runs.js';
import type { RunRow, StatusReport } from '../status/status-report.js';
import { describeVerifyProgress } from '../status/verify-text.js';
import { describeLateArrivals, LATE_PERIOD_DAYS, type LateArrivalStatus } from '../sync/late-arrivals.js';
import { otherItems, windowsRun } from '../sync/outcomes.js';
import { addDays } from '../time/days.js';
import { utcSeconds } from '../time/instant-text.js';
import { fitTable, formatTable, type Heading } from './format-table.js';
import { EVIDENCE_HEADING, evidenceCounts, snapshotChanges } from './print-run.js';
import { embeddedOption } from './run-options.js';

export function registerStatus(program: Command): void {
  program
    .command('status')
    .description(
      'Per source and resource: watermark, lag, truncated days, rejected items, failed windows; and the last runs. Exits 1 when something needs attention.',
    )
    .option('--json', 'print the report as JSON (for scripts and monitoring)')
    .addOption(new Option('--runs <n>', 'how many recent runs to show').default('5'))
    .option('--source <name>', 'only this source, each of its resources')
    .option(
      '--details',
      `each resource of every source (by default, above ${SUMMARY_ABOVE} sources, one line per source)`,
    )
    .addOption(embeddedOption())
    .action(
      async (options: {
        json?: boolean;
        runs: string;
        embedded?: boolean;
        source?: string;
        details?: boolean;
      }) => {
        const runs = Number(options.runs);
        if (!Number.isInteger(runs) || runs < 0 || runs > 1000)
          throw new CliError('--runs: expected an integer 0-1000');
        const [
          { commandContext },
          { usingWarehouse },
          { READ_STATEMENT_TIMEOUT_MS },
          { statusReport },
          { todayUtc },
          { queueStatus },
          { lateArrivalStatus },
          { verifyStatus },
        ] = await Promise.all([
          import('./command-context.js'),
          import('./warehouse.js'),
          import('../db/connection.js'),
          import('../status/status-report.js'),
          import('../time/days.js'),
          import('../status/queue-status.js'),
          import('../status/late-arrival-status.js'),
          import('../status/verify-status.js'),
        ]);
        const { config, logger } = commandContext({
          requireSources: false,
          embedded: options.embedded,
          usesPiiKey: false,
        });
        const now = new Date();
        const { report, warehouse } = await usingWarehouse(
          config,
          logger,
          async ({ db, displayUrl }) => ({
            report: {
              ...(await statusReport(db, todayUtc(now), runs, {
                now,
                confirmDays: config.webhookConfirmDays,
                // Without any source configured, status reads the warehouse alone.
                ...(config.sources.length === 0 ? {} : { configured: config.sources.map((s) => s.name) }),
              })),
              queue: await queueStatus(db, config.schema),
              lateArrivals: await lateArrivalStatus(db, config.lookbackDays, now),
              verify: await verifyStatus(db, now),
            },
            warehouse: { url: displayUrl, schema: config.schema },
          }),
          // A monitoring check: a database that stops answering ends it with exit 5, not a hang.
          { access: 'read', statementTimeoutMs: READ_STATEMENT_TIMEOUT_MS },
        );
        const shown = options.source === undefined ? report : forSource(report, options.source);
        // Which warehouse this is (password masked): a status of the wrong database looks healthy too.
        (options.json ? printOut : printProse)(
          options.json
            ? `${JSON.stringify({ warehouse, ...shown }, null, 2)}\n`
            : `warehouse: ${warehouse.url} (schema ${warehouse.schema})\n${renderStatus(shown, {
                details: options.details === true || options.source !== undefined,
                columns: terminalColumns(process.stdout),
              })}`,
        );
        if (!shown.healthy) process.exitCode = 1;
      },
    );
}

/** Above this many sources, the text shows one line per source unless --details or --source. */
export const SUMMARY_ABOVE = 10;

type ShownReport = StatusReport & {
  queue?: QueueStatus | null;
  lateArrivals?: LateArrivalStatus[];
  verify?: VerifyProgress[];
};

/** The report of one source: its resources, deliveries and jobs (the runs and the lock are shared). */
function forSource(report: ShownReport, source: string): ShownReport {
  if (!report.sources.some((s) => s.source === source))
    throw new CliError(
      `--source ${source}: no such source in the configuration or this warehouse (known: ${report.sources.map((s) => s.source).join(', ') || 'none'})`,
    );
  // Its own reasons and the runs' (a run's failure may be this source's).
  const attention = report.attention.filter((a) => a.source === undefined || a.source === source);
  return {
    ...report,
    sources: report.sources.filter((s) => s.source === source),
    attention,
    healthy: attention.length === 0,
    resources: report.resources.filter((r) => r.source === source),
    webhooks: report.webhooks.filter((w) => w.source === source),
    webhookUnconfirmed: report.webhookUnconfirmed?.filter((u) => u.source === source),
    webhookOutnumberedDays: report.webhookOutnumberedDays?.filter((d) => d.source === source),
    readingChanges: report.readingChanges.filter((c) => c.source === source),
    schemaDrift: report.schemaDrift.filter((f) => f.source === source),
    queue:
      report.queue === undefined || report.queue === null
        ? report.queue
        : { ...report.queue, sources: report.queue.sources.filter((q) => q.source === source) },
  };
}

/** One line per source: its worst lag and the sum of what needs attention. */
function sourceSummary(report: ShownReport, columns: number | undefined): string {
  const sources = report.sources.map((s) => s.source);
  const rows = sources.map((source) => {
    const mine = report.resources.filter((r) => r.source === source);
    const lags = mine.map((r) => r.lagDays).filter((lag): lag is number => lag !== null);
    const truncated = mine.reduce((n, r) => n + r.truncatedDays.length, 0);
    const failed = mine.reduce((n, r) => n + r.failedWindows.length, 0);
    const rejected = mine.reduce((n, r) => n + r.rejectedItems, 0);
    return [
      source,
      lags.length === 0 ? '-' : Math.max(...lags),
      truncated,
      rejected,
      failed,
      sourceRunCell(report, source),
      sourceState(report, source, truncated > 0),
    ];
  });
  return `${formatTable(['source', 'worst lag (days)', 'truncated days', 'rejected', 'failed windows', 'last run', 'state'], rows, columns)}\n${sources.length} sources: \`status --source NAME\` shows one source's resources, \`status --details\` every source's\n`;
}

/** A source's state word; truncated days are shown as needing a look, though they are not unhealthy. */
function sourceState(report: ShownReport, source: string, truncated: boolean): string {
  const state = report.sources.find((s) => s.source === source)?.state ?? 'ok';
  return state === 'ok' && truncated ? 'needs attention' : state;
}

/** Every reason status exits 1, one line each with its next step. */
function renderAttention(report: Pick<StatusReport, 'attention'>): string {
  // Reasons carry source names and errors from the API: each stays on its own line.
  return report.attention
    .map((a) => `needs attention: ${oneLine(a.reason)}\n  next: ${oneLine(a.next)}\n`)
    .join('');
}

/**
 * Each source's last run (how it fared, its first error), and the sources that are not plainly
 * loaded: configured but never loaded, or no longer configured. Above SUMMARY_ABOVE sources
 * (`summary`), only the sources whose last run was not ok: the table has every source's.
 */
function renderSourceNotes(report: ShownReport, summary: boolean): string {
  const notes = report.sources.flatMap((s) => {
    if (s.state === 'never loaded')
      return [
        `  ${oneLine(s.source)}: never loaded${s.lastError === null ? ' (no run has tried it yet)' : `; last error: ${oneLine(s.lastError)}`}`,
      ];
    if (s.state === 'not configured')
      return [`  ${oneLine(s.source)}: not configured (in the warehouse, no longer in the configuration)`];
    if (s.lastRun === null || (summary && s.lastRun.outcome === 'ok')) return [];
    return [`  ${oneLine(s.source)}: last run ${describeSourceRun(s.lastRun)}`];
  });
  return notes.length === 0 ? '' : `\nsources:\n${notes.join('\n')}\n`;
}

/** `8 (sync) failed: 14 failed; API key rejected ...`, or `9 (sync) ok`. */
function describeSourceRun(run: SourceRun): string {
  const head = `${run.runId} (${run.trigger}) ${run.outcome}`;
  return run.error === null ? head : `${head}: ${run.failed} failed; ${oneLine(run.error)}`;
}

/** The summary table's cell: `8 failed`, `9 ok`, or `-` for a source no run has asked. */
function sourceRunCell(report: ShownReport, source: string): string {
  const run = report.sources.find((s) => s.source === source)?.lastRun;
  return run == null ? '-' : `${run.runId} ${run.outcome}`;
}

export interface RenderOptions {
  /** Every source's resources, also above SUMMARY_ABOVE sources. */
  details?: boolean;
  /** The terminal's width: a table wider than it is shown as records (formatTable). */
  columns?: number;
}

export function renderStatus(report: ShownReport, options: RenderOptions = {}): string {
  if (report.resources.length === 0)
    return `nothing loaded yet: run \`insights-sync sync\` or \`insights-sync backfill --from YYYY-MM-DD\`\n${renderAttention(report)}`;
  const summary = options.details !== true && report.sources.length > SUMMARY_ABOVE;
  return `${renderTables(report, options)}${renderSourceNotes(report, summary)}${report.attention.length === 0 ? '' : `\n${renderAttention(report)}`}`;
}

function renderTables(report: ShownReport, options: RenderOptions): string {
  const summary = options.details !== true && report.sources.length > SUMMARY_ABOVE;
  const table = summary ? sourceSummary(report, options.columns) : resourceTable(report, options.columns);
  const runs = renderRuns(report.runs, options.columns);
  // A run's error is a sentence: under the table it keeps the columns of every other run narrow.
  const runErrors = report.runs.flatMap((r) => (r.error ? [`  run ${r.runId}: ${oneLine(r.error)}`] : []));
  const changes = report.runs.flatMap((r) => {
    const lines = r.summary === null ? [] : snapshotChanges(r.summary);
    return lines.length === 0 ? [] : [`  run ${r.runId}: ${lines.join('; ')}`];
  });
  const snapshots =
    changes.length === 0
      ? ''
      : `\nsnapshot changes (removed on evidence; suspicious: missing once, kept):\n${changes.join('\n')}\n`;
  const judged = report.runs.flatMap((r) => {
    const lines = r.summary === null ? [] : evidenceCounts(r.summary);
    return lines.length === 0 ? [] : [`  run ${r.runId}: ${lines.join('; ')}`];
  });
  const evidence = judged.length === 0 ? '' : `\n${EVIDENCE_HEADING}:\n${judged.join('\n')}\n`;
  // One line per source and resource: with the details only.
  const learned = (summary ? [] : report.resources).flatMap((r) =>
    r.reading === null ? [] : [`  ${r.source}/${r.resource}: ${r.reading.summary}`],
  );
  const readings =
    learned.length === 0
      ? ''
      : `\nwhat the servers do (learned from their answers):\n${learned.join('\n')}\n`;
  const lock = report.runLock === null ? '' : `\nrun in progress: ${describeHolderOnly(report.runLock)}\n`;
  return `${table}\n${readings}${renderReadingChanges(report)}${renderSchemaDrift(report, summary)}${renderLateArrivals(report.lateArrivals ?? [])}${renderVerify(report.verify ?? [])}\nlast runs:\n${runs}\n${runErrors.length === 0 ? '' : `${runErrors.join('\n')}\n`}${lock}${snapshots}${evidence}${renderWebhooks(report, options.columns)}${renderQueue(report.queue ?? null, options.columns)}`;
}

/** The headings of the resource table, with the abbreviations it takes on a narrow terminal. */
const RESOURCE_HEADINGS: readonly Heading[] = [
  'source',
  'resource',
  'watermark',
  { name: 'lag (days)', short: 'lag' },
  { name: 'truncated days', short: 'trunc' },
  { name: 'rejected', short: 'rej' },
  { name: 'key collisions', short: 'coll' },
  { name: 'missing upstream', short: 'miss' },
  { name: 'failed windows', short: 'fail' },
];

/**
 * A row per source and resource. Its truncated days and last failure in the row where that fits;
 * on a terminal too narrow, counts in the rows and those under the table, a line each.
 */
function resourceTable(report: ShownReport, columns: number | undefined): string {
  const whole = fitTable(
    RESOURCE_HEADINGS,
    report.resources.map((r) => resourceRow(report, r, true)),
    columns,
  );
  if (whole.form === 'table') return whole.text;
  const counts = formatTable(
    RESOURCE_HEADINGS,
    report.resources.map((r) => resourceRow(report, r, false)),
    columns,
  );
  const notes = report.resources.flatMap((r) => [
    ...(r.truncatedDays.length === 0
      ? []
      : [`  ${oneLine(r.source)}/${r.resource}: truncated ${r.truncatedDays.slice(-3).join(', ')}`]),
    ...(r.failedWindows.length === 0
      ? []
      : [
          `  ${oneLine(r.source)}/${r.resource}: last failed window: ${oneLine(r.failedWindows.at(-1)?.error ?? '')}`,
        ]),
  ]);
  return notes.length === 0 ? counts : `${counts}\n${notes.join('\n')}`;
}

/** One resource's row; `inline`: its last truncated days and last failure in the cells. */
function resourceRow(
  report: ShownReport,
  r: ShownReport['resources'][number],
  inline: boolean,
): (string | number)[] {
  return [
    r.source,
    r.resource,
    r.watermark ??
      (report.sources.find((s) => s.source === r.source)?.state === 'never loaded'
        ? 'never loaded'
        : r.lagDays === null && isSnapshot(r.resource)
          ? 'snapshot'
          : 'none'),
    r.lagDays ?? '-',
    r.truncatedDays.length === 0 || !inline
      ? r.truncatedDays.length
      : `${r.truncatedDays.length} (${r.truncatedDays.slice(-3).join(', ')})`,
    r.rejectedItems,
    r.keyCollisions,
    r.missingUpstream,
    r.failedWindows.length === 0 || !inline
      ? r.failedWindows.length
      : `${r.failedWindows.length} (last: ${r.failedWindows.at(-1)?.error ?? ''})`,
  ];
}

/** The last change of a server reading, per source that had one. */
function renderReadingChanges(report: Pick<StatusReport, 'readingChanges'>): string {
  if (report.readingChanges.length === 0) return '';
  const lines = report.readingChanges.map((c) => `  ${oneLine(describeReadingChange(c))}`);
  return `\nserver reading changes (the last per source; history in reading_changes):\n${lines.join('\n')}\n`;
}

/** The fields the spec does not describe, one line each; a count alone above SUMMARY_ABOVE sources. */
function renderSchemaDrift(report: Pick<StatusReport, 'schemaDrift'>, summary: boolean): string {
  const fields = report.schemaDrift;
  if (fields.length === 0) return '';
  const heading = 'fields the spec does not describe (kept in raw; schema_drift)';
  if (summary)
    return `\n${heading}: ${fields.length}, listed by \`status --details\` or \`status --source NAME\`\n`;
  const lines = fields.map(
    (f) =>
      `  ${oneLine(f.source)}/${f.resource} ${oneLine(f.field)}: first seen ${f.firstSeenAt}, last seen ${f.lastSeenAt}`,
  );
  return `\n${heading}:\n${lines.join('\n')}\n`;
}

/** How late data arrived, for the sources and resources that had any. */
function renderLateArrivals(late: readonly LateArrivalStatus[]): string {
  if (late.length === 0) return '';
  const lines = late.map((s) => `  ${oneLine(s.source)}/${s.resource}: ${describeLateArrivals(s)}`);
  return `\nlate data (last ${LATE_PERIOD_DAYS} days: items new on days already loaded whole):\n${lines.join('\n')}\n`;
}

/** What the verifies found (the `verify` command, the scrub), for the sources verified at least once. */
function renderVerify(progress: readonly VerifyProgress[]): string {
  if (progress.length === 0) return '';
  const lines = progress.map((p) => `  ${oneLine(p.source)}: ${describeVerifyProgress(p)}`);
  return `\nverified days (verify and the nightly scrub; lacked, changed, gone, moved: what the last verify of each day found and repaired):\n${lines.join('\n')}\n`;
}

/** The queue part, shown once the warehouse has used the queue (`--queue`, `worker`). */
function renderQueue(queue: QueueStatus | null, columns: number | undefined): string {
  if (queue === null) return '';
  const workers = formatTable(
    ['worker', 'alive', 'last seen', 'concurrency', 'windows done', 'failed'],
    queue.workers.map((w) => [
      w.workerId,
      w.alive ? 'yes' : w.stoppedAt === null ? 'no (gone)' : 'no (stopped)',
      w.lastSeenAt,
      w.concurrency,
      w.windowsDone,
      w.windowsFailed,
    ]),
    columns,
  );
  const jobs = formatTable(
    ['source', 'queued', 'running', 'completed', 'failed', 'cancelled', 'retried', 'per minute'],
    queue.sources.map((s) => [
      s.source,
      s.queued,
      s.running,
      s.completed,
      s.failed,
      s.cancelled,
      s.retried,
      s.perMinute.toFixed(1),
    ]),
    columns,
  );
  return `\nqueue: ${queue.workersAlive} worker(s) alive, ${queue.perMinute.toFixed(1)} windows per minute (last 5 minutes)\n${workers}\nwindow jobs:\n${jobs}\n`;
}

/**
 * The last runs: one table where the terminal is wide enough (or unknown), else two, their windows
 * and their items, each fitted (formatTable): fifteen columns of a run do not fit 80.
 */
export function renderRuns(runs: readonly RunRow[], columns: number | undefined): string {
  const rows = runs.map((r) => {
    const totals = runTotals(r);
    return {
      head: [
        r.runId,
        r.fromDay === null ? r.trigger : `${r.trigger} ${r.fromDay}..${r.toDay ?? ''}`,
        r.status,
        utcSeconds(r.startedAt),
        r.durationMs === null ? '-' : `${(r.durationMs / 1000).toFixed(1)} s`,
      ],
      windows: WINDOW_COUNTS.map(([key]) => totals[key]),
      items: ITEM_COUNTS.map(([key]) => totals[key]),
    };
  });
  const heads = ['run', 'trigger', 'status', 'started (UTC)', 'duration'];
  const windowHeads = WINDOW_COUNTS.map(([, heading]) => heading);
  const itemHeads = ITEM_COUNTS.map(([, heading]) => heading);
  const one = fitTable(
    [...heads, ...windowHeads, ...itemHeads],
    rows.map((r) => [...r.head, ...r.windows, ...r.items]),
    columns,
  );
  if (one.form === 'table') return one.text;
  const windows = formatTable(
    [...heads, ...windowHeads],
    rows.map((r) => [...r.head, ...r.windows]),
    columns,
  );
  const items = formatTable(
    ['run', ...itemHeads],
    rows.map((r) => [r.head[0] ?? '', ...r.items]),
    columns,
  );
  return `${windows}\nitems of their day windows:\n${items}`;
}

/**
 * A run's counts of day windows over all its sources (status --json has them per resource): the
 * windows it ran (failed ones too, and those not attempted because of a failure), and those it did
 * not run (a shutdown, or a stop on a database that cannot take writes).
 */
const WINDOW_COUNTS = [
  ['windows', { name: 'windows run', short: 'ran' }],
  ['failed', { name: 'failed', short: 'fail' }],
  ['notRun', 'not run'],
] as const satisfies readonly (readonly [string, Heading])[];

/** What the items its windows fetched became (ITEM_IDENTITY), and its truncated days. */
const ITEM_COUNTS = [
  ['fetched', 'fetched'],
  ['inserted', { name: 'inserted', short: 'ins' }],
  ['updated', { name: 'updated', short: 'upd' }],
  ['unchanged', { name: 'unchanged', short: 'same' }],
  ['rejected', { name: 'rejected', short: 'rej' }],
  ['other', 'other'],
  ['truncated', { name: 'truncated days', short: 'trunc' }],
] as const satisfies readonly (readonly [string, Heading])[];

type RunCount = (typeof WINDOW_COUNTS)[number][0] | (typeof ITEM_COUNTS)[number][0];

function runTotals(run: RunRow): Record<RunCount, number | string> {
  const totals: Record<RunCount, number> = {
    windows: 0,
    failed: 0,
    notRun: 0,
    fetched: 0,
    inserted: 0,
    updated: 0,
    unchanged: 0,
    rejected: 0,
    other: 0,
    truncated: 0,
  };
  if (run.summary === null)
    return Object.fromEntries(Object.keys(totals).map((key) => [key, '-'])) as Record<RunCount, string>;
  // The day windows' counts, which add up (ITEM_IDENTITY); snapshots count items read and rows
  // of several tables, and show as their changes below the runs.
  for (const resources of Object.values(run.summary)) {
    for (const resource of WINDOWED_RESOURCES) {
      const s = resources[resource];
      if (!s) continue;
      totals.windows += windowsRun(s);
      totals.failed += s.failedWindows;
      totals.notRun += s.skippedWindows;
      totals.fetched += s.fetched;
      totals.inserted += s.inserted;
      totals.updated += s.updated;
      totals.unchanged += s.unchanged;
      totals.rejected += s.rejected;
      totals.other += otherItems(s);
      totals.truncated += s.truncatedDays.length;
    }
  }
  return totals;
}

/** The webhook part, shown once a source has received a delivery. */
function renderWebhooks(report: StatusReport, columns: number | undefined): string {
  if (report.webhooks.length === 0) return '';
  const table = formatTable(
    [
      'source',
      'received today',
      'rejected',
      'webhook-only rows',
      `unconfirmed > ${report.webhookConfirmDays} d`,
    ],
    report.webhooks.map((w) => [
      w.source,
      w.receivedToday,
      w.rejected,
      w.provisional,
      w.unconfirmed === 0 ? '0' : `${w.unconfirmed} (oldest ${w.oldestUnconfirmed ?? ''})`,
    ]),
    columns,
  );
  return `\nwebhooks:\n${table}\n${renderUnconfirmedWebhooks(report)}`;
}

/**
 * Webhook-only items the API has not served within the confirm days, and days whose deliveries
 * outnumber the API's items, each with its next step: read the days again, then ask the service.
 */
function renderUnconfirmedWebhooks(report: StatusReport): string {
  const lines: string[] = [];
  const days = report.webhookConfirmDays;
  for (const u of report.webhookUnconfirmed ?? []) {
    const first = u.days[0] ?? '';
    const last = u.days[u.days.length - 1] ?? first;
    // A delivery just after midnight announces an item of the day before: that day is read too.
    const from = first === '' ? first : addDays(first, -1);
    lines.push(
      `${u.source} ${u.resource}: ${u.count} webhook-only ${u.count === 1 ? 'item' : 'items'} the API has not served within ${days} d of delivery (oldest received ${u.oldestReceivedAt}; delivered on ${u.days.length === 1 ? first : `${u.days.length} days, ${first} to ${last}`}). Next: insights-sync backfill --from ${from} --to ${last} --source ${u.source} --resources ${u.resource}; if the API still does not serve them, ask the service why its API lacks what its webhooks announced`,
    );
  }
  for (const d of report.webhookOutnumberedDays ?? [])
    lines.push(
      `${d.source} ${d.resource} ${d.day}: ${d.deliveries} webhook deliveries, ${d.apiItems} items from the API. Next: insights-sync backfill --from ${d.day} --to ${d.day} --source ${d.source} --resources ${d.resource}; if the API still serves fewer, ask the service`,
    );
  return lines.length === 0 ? '' : `${lines.join('\n')}\n`;
}
