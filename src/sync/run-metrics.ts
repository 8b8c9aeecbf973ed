import { Gauge, Registry } from 'prom-client';
import type { VerifyProgress } from '../ledger/read.js';
import { VERIFY_PERIOD_DAYS } from '../ledger/read-period.js';
import { processRegistry } from '../metrics/registry.js';
import type { RunSummary, SnapshotOutcome, WindowOutcome } from './outcomes.js';
import { createVerifyGauges, setVerifyGauges, type VerifyGauges } from './verify-metrics.js';

/**
 * The metrics of the last run (sync, backfill or a scheduled run), following Prometheus' advice
 * for batch jobs: gauges of what the last run did, its duration and the time of the last
 * success. Not counters: the textfile of a one-shot `sync` holds one run, and a counter that
 * restarts from each run's numbers would read as resets.
 */
export interface RunMetricsInput {
  result: {
    status: (typeof RUN_STATUSES)[number];
    summary: RunSummary;
    windows: readonly WindowOutcome[];
    snapshots: readonly SnapshotOutcome[];
    durationMs: number;
    /** Per source: HTTP requests by response status ('none': no response). */
    requests: Record<string, Record<string, number>>;
  };
  /** When the run ended. */
  finishedAt: Date;
  /** When the last run that ended ok ended (this one, if it did); null if none has. */
  lastSuccessAt: Date | null;
  /** The verifies' progress per source, over the last VERIFY_PERIOD_DAYS days (verify-metrics.ts). */
  verify: readonly VerifyProgress[];
}

const RUN_STATUSES = ['ok', 'partial', 'failed', 'interrupted'] as const;
const ROW_OUTCOMES = ['inserted', 'updated', 'unchanged', 'rejected'] as const;

interface RunGauges {
  rows: Gauge<'source' | 'resource' | 'outcome'>;
  windows: Gauge<'source' | 'resource' | 'outcome'>;
  truncated: Gauge<'source' | 'resource'>;
  requests: Gauge<'source' | 'status'>;
  duration: Gauge;
  finished: Gauge;
  status: Gauge<'status'>;
  lastSuccess: Gauge;
}

function createRunGauges(registry: Registry): RunGauges {
  const registers = [registry];
  return {
    rows: new Gauge({
      name: 'insights_sync_last_run_rows',
      help: 'Rows the last run inserted, updated, left unchanged or rejected, per source and resource.',
      labelNames: ['source', 'resource', 'outcome'],
      registers,
    }),
    windows: new Gauge({
      name: 'insights_sync_last_run_windows',
      help: 'Day windows (and snapshots) of the last run: loaded, failed or skipped, per source and resource.',
      labelNames: ['source', 'resource', 'outcome'],
      registers,
    }),
    truncated: new Gauge({
      name: 'insights_sync_last_run_truncated_windows',
      help: 'Day windows of the last run that came back truncated (at the server cap or INSIGHTS_MAX_LIMIT).',
      labelNames: ['source', 'resource'],
      registers,
    }),
    requests: new Gauge({
      name: 'insights_sync_last_run_requests',
      help: 'HTTP requests of the last run (attempts included) by response status; status "none": no response (network error, timeout).',
      labelNames: ['source', 'status'],
      registers,
    }),
    duration: new Gauge({
      name: 'insights_sync_last_run_duration_seconds',
      help: 'How long the last run took.',
      registers,
    }),
    finished: new Gauge({
      name: 'insights_sync_last_run_timestamp_seconds',
      help: 'When the last run ended (Unix time).',
      registers,
    }),
    status: new Gauge({
      name: 'insights_sync_last_run_status',
      help: 'How the last run ended: 1 for its status, 0 for the others.',
      labelNames: ['status'],
      registers,
    }),
    lastSuccess: new Gauge({
      name: 'insights_sync_last_success_timestamp_seconds',
      help: 'When the last run that loaded everything (status ok) ended (Unix time); 0 if none has.',
      registers,
    }),
  };
}

function setRunGauges(gauges: RunGauges, { result, finishedAt, lastSuccessAt }: RunMetricsInput): void {
  for (const gauge of Object.values(gauges)) gauge.reset();
  for (const [source, resources] of Object.entries(result.summary)) {
    for (const [resource, summary] of Object.entries(resources)) {
      if (summary === undefined) continue;
      for (const outcome of ROW_OUTCOMES) gauges.rows.set({ source, resource, outcome }, summary[outcome]);
      gauges.truncated.set({ source, resource }, summary.truncatedDays.length);
      gauges.windows.set({ source, resource, outcome: 'failed' }, summary.failedWindows);
      gauges.windows.set({ source, resource, outcome: 'skipped' }, summary.skippedWindows);
      gauges.windows.set({ source, resource, outcome: 'loaded' }, 0);
    }
  }
  // Loaded: windows done or open, snapshots done (the summary counts windows, not snapshots).
  for (const o of [...result.windows, ...result.snapshots]) {
    if (o.status === 'done' || o.status === 'open')
      gauges.windows.inc({ source: o.source, resource: o.resource, outcome: 'loaded' });
  }
  for (const [source, statuses] of Object.entries(result.requests))
    for (const [status, count] of Object.entries(statuses)) gauges.requests.set({ source, status }, count);
  gauges.duration.set(result.durationMs / 1000);
  gauges.finished.set(finishedAt.getTime() / 1000);
  for (const status of RUN_STATUSES) gauges.status.set({ status }, status === result.status ? 1 : 0);
  gauges.lastSuccess.set(lastSuccessAt === null ? 0 : lastSuccessAt.getTime() / 1000);
}

let processGauges: { run: RunGauges; verify: VerifyGauges } | undefined;

/** Sets the last run's gauges in the process registry: what `schedule` exposes on /metrics. */
export function recordRun(input: RunMetricsInput): void {
  processGauges ??= {
    run: createRunGauges(processRegistry),
    verify: createVerifyGauges(processRegistry, VERIFY_PERIOD_DAYS),
  };
  setRunGauges(processGauges.run, input);
  setVerifyGauges(processGauges.verify, input.verify);
}

/** The last run's metrics and the verifies' alone, as exposition text: the textfile for node_exporter. */
export function runMetricsText(input: RunMetricsInput): Promise<string> {
  const registry = new Registry();
  setRunGauges(createRunGauges(registry), input);
  setVerifyGauges(createVerifyGauges(registry, VERIFY_PERIOD_DAYS), input.verify);
  return registry.metrics();
}
