import type { Command } from 'commander';
import { Option } from 'commander';
import { CliError } from '../errors.js';
import { todayUtc } from '../extract/days.js';
import { type StatusReport, statusReport } from '../sync/status-report.js';
import { commandContext } from './command-context.js';
import { formatTable } from './format-table.js';
import { usingWarehouse } from './warehouse.js';

export function registerStatus(program: Command): void {
  program
    .command('status')
    .description(
      'Per source and resource: watermark, lag, truncated days, rejected items, failed windows; and the last runs. Exits 1 when something needs attention.',
    )
    .option('--json', 'print the report as JSON (for scripts and monitoring)')
    .addOption(new Option('--runs <n>', 'how many recent runs to show').default('5'))
    .action(async (options: { json?: boolean; runs: string }) => {
      const runs = Number(options.runs);
      if (!Number.isInteger(runs) || runs < 0 || runs > 1000)
        throw new CliError('--runs: expected an integer 0-1000');
      const { config, logger } = commandContext({ requireSources: false });
      const report = await usingWarehouse(config, logger, ({ db }) =>
        statusReport(db, todayUtc(new Date()), runs),
      );
      process.stdout.write(options.json ? `${JSON.stringify(report, null, 2)}\n` : renderStatus(report));
      if (!report.healthy) process.exitCode = 1;
    });
}

export function renderStatus(report: StatusReport): string {
  if (report.resources.length === 0)
    return 'nothing loaded yet: run `insights-sync sync` or `insights-sync backfill --from YYYY-MM-DD`\n';
  const table = formatTable(
    ['source', 'resource', 'watermark', 'lag (days)', 'truncated days', 'rejected', 'failed windows'],
    report.resources.map((r) => [
      r.source,
      r.resource,
      r.watermark ??
        (r.lagDays === null && ['abtesting', 'personalization', 'heatmaps'].includes(r.resource)
          ? 'snapshot'
          : 'none'),
      r.lagDays ?? '-',
      r.truncatedDays.length === 0
        ? '0'
        : `${r.truncatedDays.length} (${r.truncatedDays.slice(-3).join(', ')})`,
      r.rejectedItems,
      r.failedWindows.length === 0
        ? '0'
        : `${r.failedWindows.length} (last: ${r.failedWindows.at(-1)?.error ?? ''})`,
    ]),
  );
  const runs = formatTable(
    ['run', 'trigger', 'status', 'started', 'duration', 'error'],
    report.runs.map((r) => [
      r.runId,
      r.trigger,
      r.status,
      r.startedAt,
      r.durationMs === null ? '-' : `${(r.durationMs / 1000).toFixed(1)} s`,
      r.error ?? '',
    ]),
  );
  return `${table}\n\nlast runs:\n${runs}\n`;
}
