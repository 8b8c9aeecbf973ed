import type { Command } from 'commander';
import type { CheckReport } from '../check/check-run.js';
import { printOut, terminalColumns } from '../log/terminal-text.js';
import { formatTable } from './format-table.js';

export function registerCheck(program: Command): void {
  program
    .command('check')
    .description(
      'Check the set-up without changing anything: the configuration, the database (reachable, migrated, who holds the run lock), and per source the API key and each endpoint (one small request each). One table; exit 0 when every check passed, else the most specific code: 3 key rejected, 5 database unreachable, 2 configuration (or a warehouse not migrated), 6 a file a run writes (INSIGHTS_METRICS_FILE) cannot be written, 1 an endpoint failing.',
    )
    .option('--json', 'print the checks as JSON (for scripts and monitoring)')
    .option('--strict', 'an INSIGHTS_* variable that is not a setting (a typo) fails the check (exit 2)')
    .option(
      '--source <name>',
      "only this source's key and endpoints (the database and settings are checked as ever)",
    )
    .option('--failures', 'show only the checks that did not pass, and how many passed')
    .addHelpText(
      'after',
      [
        '',
        'Reads every setting of every command (a bad INSIGHTS_SCHEDULE fails here, too), and a server',
        'database only (DATABASE_URL): it never starts the embedded one, never migrates, never writes.',
        'A database problem does not stop the API checks, nor the reverse: every row is filled.',
      ].join('\n'),
    )
    .action(async (options: { json?: boolean; strict?: boolean; source?: string; failures?: boolean }) => {
      const { onlyProblems, runChecks } = await import('../check/check-run.js');
      const all = await runChecks({ strict: options.strict === true, source: options.source });
      const report = options.failures ? onlyProblems(all) : all;
      printOut(options.json ? `${JSON.stringify(report, null, 2)}\n` : renderChecks(report));
      process.exitCode = report.exitCode;
    });
}

/** The checks as a table (none under --failures when all passed), and the verdict under it. */
function renderChecks(report: CheckReport & { passedHidden?: number }): string {
  const table =
    report.checks.length === 0
      ? ''
      : `${formatTable(
          ['check', 'subject', 'status', 'detail'],
          report.checks.map((row) => [row.check, row.subject, row.status, row.detail]),
          terminalColumns(process.stdout),
        )}\n\n`;
  const hidden = report.passedHidden ? `; ${report.passedHidden} passed, not shown` : '';
  return `${table}${checkVerdict(report)}${hidden}\n`;
}

/** The line under the checks: "all" only when every row passed; warnings and skipped rows counted. */
export function checkVerdict(report: Pick<CheckReport, 'ok' | 'exitCode' | 'checks'>): string {
  const count = (status: CheckReport['checks'][number]['status'], one: string, many: string) => {
    const n = report.checks.filter((row) => row.status === status).length;
    return n === 0 ? [] : [`${n} ${n === 1 ? one : many}`];
  };
  const notes = [...count('warning', 'warning', 'warnings'), ...count('skipped', 'skipped', 'skipped')];
  if (!report.ok)
    return `some checks failed (exit code ${report.exitCode})${notes.length === 0 ? '' : `; ${notes.join(', ')}`}`;
  return notes.length === 0 ? 'all checks passed' : `checks passed with ${notes.join(', ')}`;
}
