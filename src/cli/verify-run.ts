import { createDb } from '../db/connection.js';
import { rolledBackPool } from '../db/rolled-back-pool.js';
import { printOut, printProse, terminalColumns } from '../log/terminal-text.js';
import type { RunResult, WindowOutcome } from '../sync/outcomes.js';
import { forcedExitRecorder, type RunWarehouse, runLocked } from '../sync/run-locked.js';
import { shutdownSignal } from '../sync/shutdown.js';
import {
  type DayVerdict,
  foundShort,
  publishVerifyMetrics,
  runVerify,
  type VerifyRequest,
  type VerifyResult,
} from '../sync/verify.js';
import { daysFrom } from '../time/days.js';
import type { CommandContext } from './command-context.js';
import { formatTable } from './format-table.js';
import { runFailure } from './print-run.js';
import { createProgress } from './progress.js';
import { usingWarehouse } from './warehouse.js';

export interface VerifyOptions {
  dryRun: boolean;
  json: boolean;
  wait: boolean;
}

/**
 * `verify`: the verify's runs under the warehouse lock, as a sync's (a dry run on a connection
 * whose one transaction is rolled back at the end), a progress bar, the findings, the exit code.
 */
export async function executeVerify(
  context: CommandContext,
  request: VerifyRequest,
  options: VerifyOptions,
): Promise<void> {
  const { config, logger } = context;
  const recorder = forcedExitRecorder();
  const shutdown = shutdownSignal({ logger, graceMs: config.shutdownGraceMs, onForce: recorder.onForce });
  const progress = options.json
    ? undefined
    : createProgress({
        days: daysFrom(request.from, request.to),
        logger,
        label: 'verify',
        tty: Boolean(process.stderr.isTTY) && !process.env.CI,
      });
  try {
    const result = await usingWarehouse(
      config,
      logger,
      async (warehouse) => {
        const dry = options.dryRun ? await rolledBackPool(warehouse.pool) : undefined;
        const target: RunWarehouse =
          dry === undefined ? warehouse : { pool: dry.pool, db: createDb(dry.pool), url: warehouse.url };
        let pass = 0;
        try {
          const verified = await runVerify(
            {
              db: target.db,
              run: (sync, onWindow) => {
                // The bar follows the verify's run; its confirming pass is a few windows more.
                const shown = pass++ === 0 ? progress : undefined;
                return runLocked(target, context, sync, {
                  wait: options.wait,
                  signal: shutdown.signal,
                  ...recorder.hooks,
                  onPlan: (total, runId) => {
                    recorder.hooks.onPlan(total, runId);
                    shown?.onPlan(total, runId);
                  },
                  onWindow: (outcome: WindowOutcome, done, total) => {
                    recorder.hooks.onWindow(outcome);
                    onWindow(outcome);
                    shown?.onWindow(outcome, done, total);
                  },
                });
              },
            },
            request,
          );
          // A dry run kept nothing: the metrics its runs wrote stand.
          if (dry !== undefined) return verified;
          const published = await publishVerifyMetrics(target.db, verified, config, logger);
          const last = verified.runs.length - 1;
          const lastRun = verified.runs[last];
          if (published.metricsFileError !== undefined && lastRun !== undefined)
            verified.runs[last] = { ...lastRun, metricsFileError: published.metricsFileError };
          return verified;
        } finally {
          await dry?.discard();
        }
      },
      { access: 'write' },
    );
    progress?.stop();
    if (options.json) printOut(`${JSON.stringify(verifyJson(result, request, options.dryRun), null, 2)}\n`);
    else printProse(verifyText(result, options.dryRun, terminalColumns(process.stdout)));
    for (const run of result.runs) {
      const failure = runFailure(run);
      if (failure !== undefined) throw failure;
    }
  } finally {
    progress?.stop();
    shutdown.dispose();
  }
}

/** The four findings, summed. */
export function verifyTotals(days: readonly DayVerdict[]) {
  return days.reduce(
    (t, d) => ({
      lacked: t.lacked + d.lacked,
      changed: t.changed + d.changed,
      gone: t.gone + d.gone,
      moved: t.moved + d.moved,
    }),
    { lacked: 0, changed: 0, gone: 0, moved: 0 },
  );
}

const differs = (d: DayVerdict) => d.lacked + d.changed + d.gone + d.moved > 0;
/** A day the verify read but not whole: what it found holds for the part the service answered. */
const readInPart = (d: DayVerdict) => d.status === 'done' && d.truncated;

/** A row per day and resource where the verify found something, then the totals and the days found short. */
export function verifyText(result: VerifyResult, dryRun: boolean, columns?: number): string {
  const rows = result.days
    .filter(differs)
    .map((d) => [d.source, d.resource, d.day, d.lacked, d.changed, d.gone, d.moved]);
  const verified = result.days.filter((d) => d.status === 'done').length;
  const notVerified = result.days.filter((d) => d.status !== 'done');
  const totals = verifyTotals(result.days);
  const short = result.days.filter(foundShort).map((d) => `${d.source}/${d.resource}/${d.day}`);
  const truncated = result.days.filter(readInPart).map((d) => `${d.source}/${d.resource}/${d.day}`);
  const requests = result.runs.reduce(
    (n, run) => n + Object.values(run.requests).reduce((m, byStatus) => m + sum(byStatus), 0),
    0,
  );
  const lines = [
    rows.length === 0
      ? 'no differences: the warehouse holds what the service serves for every day verified'
      : formatTable(['source', 'resource', 'day', 'lacked', 'changed', 'gone', 'moved'], rows, columns),
    'lacked: items the warehouse did not have (stored now); changed: stored versions that differed (rewritten); gone: rows no longer served by two whole reads (marked missing_upstream_since, kept); moved: items whose dt moved to another day',
    ...(short.length === 0
      ? []
      : [`days found short (settled, yet lacking items; repaired): ${short.join(', ')}`]),
    ...(truncated.length === 0
      ? []
      : [
          `read only in part (truncated: the answers stayed at the server's cap; verified as far as they reach, still flagged): ${truncated.join(', ')}`,
        ]),
    ...(notVerified.length === 0
      ? []
      : [
          `not verified (${notVerified.length}): ${notVerified
            .slice(0, 10)
            .map(
              (d) =>
                `${d.source}/${d.resource}/${d.day} ${d.status}${d.error === undefined ? '' : `: ${d.error}`}`,
            )
            .join('; ')}`,
        ]),
    `${dryRun ? 'dry run, nothing kept: ' : ''}runs ${result.runs.map((r) => `${r.runId} ${r.status}`).join(', ')}`,
    `totals: windows_verified=${verified} lacked=${totals.lacked} changed=${totals.changed} gone=${totals.gone} moved=${totals.moved} requests=${requests}`,
  ];
  return `${lines.join('\n')}\n`;
}

function sum(byStatus: Record<string, number>): number {
  return Object.values(byStatus).reduce((n, c) => n + c, 0);
}

export function verifyJson(result: VerifyResult, request: VerifyRequest, dryRun: boolean) {
  return {
    from: request.from,
    to: request.to,
    dryRun,
    runs: result.runs.map((r: RunResult) => ({
      runId: r.runId,
      status: r.status,
      error: r.error,
      requests: r.requests,
    })),
    totals: verifyTotals(result.days),
    daysFoundShort: result.days
      .filter(foundShort)
      .map(({ source, resource, day }) => ({ source, resource, day })),
    daysReadInPart: result.days
      .filter(readInPart)
      .map(({ source, resource, day }) => ({ source, resource, day })),
    days: result.days,
  };
}
