import {
  DatabaseUnavailableError,
  type InsightsError,
  OutputWriteError,
  RunFailedError,
  writeFailureWins,
} from '../errors.js';
import { printProse, terminalColumns } from '../log/terminal-text.js';
import { ITEM_IDENTITY, otherItems, type RunResult, type RunSummary } from '../sync/outcomes.js';
import { formatTable } from './format-table.js';

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
  const rows: (string | number)[][] = [];
  for (const [source, resources] of Object.entries(result.summary)) {
    for (const [resource, s] of Object.entries(resources)) {
      if (!s) continue;
      rows.push([
        source,
        resource,
        s.windows,
        s.fetched,
        s.inserted,
        s.updated,
        s.unchanged,
        s.rejected,
        otherItems(s),
        s.truncatedDays.length,
        s.failedWindows,
      ]);
    }
  }
  out.write(
    `${formatTable(['source', 'resource', 'windows', 'fetched', 'inserted', 'updated', 'unchanged', 'rejected', 'other', 'truncated', 'failed'], rows, out.columns)}\n`,
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
      `items of neighbouring days that came along (not in fetched): ${neighbours.came}, of them ${neighbours.added} stored because their own day lacked them\n`,
    );
  const truncated = Object.entries(result.summary).flatMap(([source, resources]) =>
    Object.entries(resources).flatMap(([resource, s]) =>
      s && s.truncatedDays.length > 0 ? [`${source}/${resource}: ${s.truncatedDays.join(', ')}`] : [],
    ),
  );
  if (truncated.length > 0) {
    out.write(
      `possibly truncated days (responses stayed at the limit or the server cap; see "Truncated days" in the README): ${truncated.join('; ')}\n`,
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
  const failure = runFailure(result);
  if (failure !== undefined) throw failure;
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
