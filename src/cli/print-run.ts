import {
  DatabaseUnavailableError,
  type InsightsError,
  OutputWriteError,
  RunFailedError,
  writeFailureWins,
} from '../errors.js';
import { printProse, terminalColumns } from '../log/terminal-text.js';
import { isWindowed } from '../schemas/resource-names.js';
import { ITEM_IDENTITY, otherItems, type RunResult, type RunSummary, windowsRun } from '../sync/outcomes.js';
import { formatTable, type Heading } from './format-table.js';

/** Where the summary goes; `columns`, a terminal's width, turns a table too wide into records. */
export interface RunOutput {
  write(text: string): unknown;
  columns?: number;
}

/** The run summary table on stdout, then the exit decision: anything but ok is non-zero. */
export function printRun(
  result: RunResult,
  out: RunOutput = { write: printProse, columns: terminalColumns(process.stdout) },
): void {
  const sources = Object.keys(result.summary).length;
  out.write(
    sources > PER_SOURCE_ABOVE
      ? `${formatTable(
          RUN_HEADINGS.filter((h) => h !== 'resource'),
          sourceRows(result.summary),
          out.columns,
        )}\n${sources} sources, a line each, their day windows summed (\`status --json\` has each resource of each run)\n`
      : `${formatTable(RUN_HEADINGS, summaryRows(result.summary), out.columns)}\n`,
  );
  out.write(
    `day windows: ${ITEM_IDENTITY.replace('setAside + duplicates + suppressed + discarded', 'other')} (other: set aside in key_collisions, duplicates in a response, forgotten visitors, items of a failed day); tests and heatmaps count items read and rows written\n`,
  );
  const neighbours = Object.values(result.summary)
    .flatMap((resources) => Object.values(resources))
    .reduce((n, s) => ({ came: n.came + (s?.neighbours ?? 0), added: n.added + (s?.neighboursAdded ?? 0) }), {
      came: 0,
      added: 0,
    });
  if (neighbours.came > 0)
    out.write(
      `items of neighbouring days that came along (not in fetched): ${neighbours.came}, of them ${neighbours.added} stored because their own day lacked them (in written; their own day's window then finds them unchanged)\n`,
    );
  const truncated = Object.entries(result.summary).flatMap(([source, resources]) =>
    Object.entries(resources).flatMap(([resource, s]) =>
      s && s.truncatedDays.length > 0 ? [`${source}/${resource}: ${s.truncatedDays.join(', ')}`] : [],
    ),
  );
  if (truncated.length > 0) {
    out.write(
      `possibly truncated days (responses stayed at the limit or the server cap, or came back short while the server changed how it answers; see "Truncated days" in the README): ${truncated.join('; ')}\n`,
    );
  }
  const changes = snapshotChanges(result.summary);
  if (changes.length > 0) {
    out.write(
      `snapshot changes (a row is removed only on evidence; suspicious rows were missing once and are kept; see "Snapshot" in the README): ${changes.join('; ')}\n`,
    );
  }
  const evidence = evidenceCounts(result.summary);
  if (evidence.length > 0) out.write(`${EVIDENCE_HEADING}: ${evidence.join('; ')}\n`);
  out.write(`run ${result.runId}: ${result.status} in ${(result.durationMs / 1000).toFixed(1)} s\n`);
  out.write(`${totalsLine(result.summary)}\n`);
  const failure = runFailure(result);
  if (failure !== undefined) throw failure;
}

/** The run summary's headings, each with the abbreviation it takes on a narrow terminal. */
const RUN_HEADINGS: readonly Heading[] = [
  'source',
  'resource',
  { name: 'windows run', short: 'ran' },
  { name: 'failed', short: 'fail' },
  'not run',
  { name: 'fetched', short: 'fetch' },
  { name: 'inserted', short: 'ins' },
  { name: 'updated', short: 'upd' },
  { name: 'unchanged', short: 'same' },
  { name: 'rejected', short: 'rej' },
  'other',
  { name: 'truncated', short: 'trunc' },
];

/** Above this many sources, the run summary shows a line per source (as `status` does). */
export const PER_SOURCE_ABOVE = 10;

/** A row per source: its day windows' counts summed over its resources. */
export function sourceRows(summary: RunSummary): (string | number)[][] {
  return Object.keys(summary).map((source) => {
    const rows = summaryRows({ [source]: summary[source] ?? {} }).filter(([, resource]) =>
      isWindowed(String(resource)),
    );
    const counts = RUN_HEADINGS.slice(2).map((_, i) =>
      rows.reduce((n, row) => n + Number(row[i + 2] ?? 0), 0),
    );
    return [source, ...counts];
  });
}

/**
 * A row per source and resource: the windows it ran (failed ones among them) and those it did not
 * run add up to those it planned; the items, as ITEM_IDENTITY.
 */
export function summaryRows(summary: RunSummary): (string | number)[][] {
  return Object.entries(summary).flatMap(([source, resources]) =>
    Object.entries(resources).flatMap(([resource, s]) =>
      s
        ? [
            [
              source,
              resource,
              windowsRun(s),
              s.failedWindows,
              s.skippedWindows,
              s.fetched,
              s.inserted,
              s.updated,
              s.unchanged,
              s.rejected,
              otherItems(s),
              s.truncatedDays.length,
            ],
          ]
        : [],
    ),
  );
}

/**
 * The run's one totals line, last, as dbt ends its runs: over many sources the table is long, and
 * this is what a glance reads. Windows and items of the day windows (written: every row they
 * wrote, inserted or updated, and the neighbours' items stored because their own day lacked them,
 * which their own day's window then counts unchanged); snapshots that failed.
 */
export function totalsLine(summary: RunSummary): string {
  const sums = {
    sources: 0,
    ran: 0,
    failed: 0,
    notRun: 0,
    fetched: 0,
    stored: 0,
    truncated: 0,
    snapshotsFailed: 0,
  };
  for (const resources of Object.values(summary)) {
    sums.sources += 1;
    for (const [resource, s] of Object.entries(resources)) {
      if (!s) continue;
      if (!isWindowed(resource)) {
        sums.snapshotsFailed += s.failedWindows;
        continue;
      }
      sums.ran += windowsRun(s);
      sums.failed += s.failedWindows;
      sums.notRun += s.skippedWindows;
      sums.fetched += s.fetched;
      sums.stored += s.inserted + s.updated + (s.neighboursAdded ?? 0);
      sums.truncated += s.truncatedDays.length;
    }
  }
  const snapshots = sums.snapshotsFailed === 0 ? '' : ` snapshots_failed=${sums.snapshotsFailed}`;
  return `totals: sources=${sums.sources} windows_run=${sums.ran} failed=${sums.failed} not_run=${sums.notRun} fetched=${sums.fetched} written=${sums.stored} truncated_days=${sums.truncated}${snapshots}`;
}

/**
 * How a run ends, other than ok: its own failure, or the metrics file it could not write when
 * that failure would end it 0 or 1 (writeFailureWins: the same rule as standard output's).
 */
export function runFailure(
  result: Pick<
    RunResult,
    'status' | 'error' | 'windows' | 'snapshots' | 'metricsFileError' | 'runId' | 'lockLost'
  >,
): InsightsError | undefined {
  // The database ended the run (its lock's session): the database's code, whatever else happened.
  if (result.lockLost !== undefined) return new DatabaseUnavailableError(result.lockLost);
  const own =
    result.status === 'ok'
      ? undefined
      : new RunFailedError(
          `run ${result.status}: ${result.error ?? 'see the summary above'}`,
          [...result.windows, ...result.snapshots].some((o) => o.fatal)
            ? 3
            : result.status === 'interrupted'
              ? 130
              : 1,
        );
  if (result.metricsFileError === undefined || !writeFailureWins(own?.exitCode ?? 0)) return own;
  return new OutputWriteError(
    `the metrics file (INSIGHTS_METRICS_FILE; run ${result.runId} is loaded and recorded)`,
    result.metricsFileError,
  );
}

/** `source/resource: 1 removed, 2 suspicious` for each snapshot resource whose rows changed state. */
export function snapshotChanges(summary: RunSummary): string[] {
  return Object.entries(summary).flatMap(([source, resources]) =>
    Object.entries(resources).flatMap(([resource, s]) => {
      if (!s) return [];
      const counts = (
        [
          [s.removed, 'removed'],
          [s.revived ?? 0, 'revived'],
          [s.suspicious ?? 0, 'suspicious'],
        ] as const
      ).filter(([n]) => n > 0);
      return counts.length === 0
        ? []
        : [`${source}/${resource}: ${counts.map(([n, label]) => `${n} ${label}`).join(', ')}`];
    }),
  );
}

/** What the evidence counts mean, once, before them: the run summary and `status` both print it. */
export const EVIDENCE_HEADING =
  're-asked empty answers, items moved to another day, rows newly marked missing upstream (kept, left out of the analyst views; see "Items no longer served" in docs/warehouse.md)';

/** `source/resource: 2 re-asked, 1 moved, 1 missing upstream` for each resource where one is non-zero. */
export function evidenceCounts(summary: RunSummary): string[] {
  return Object.entries(summary).flatMap(([source, resources]) =>
    Object.entries(resources).flatMap(([resource, s]) => {
      if (!s) return [];
      const counts = (
        [
          [s.reasked ?? 0, 're-asked'],
          [s.moves ?? 0, 'moved'],
          [s.missingUpstream ?? 0, 'missing upstream'],
        ] as const
      ).filter(([n]) => n > 0);
      return counts.length === 0
        ? []
        : [`${source}/${resource}: ${counts.map(([n, label]) => `${n} ${label}`).join(', ')}`];
    }),
  );
}
