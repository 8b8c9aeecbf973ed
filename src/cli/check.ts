import type { Command } from 'commander';
import type { CheckReport } from '../check/check-run.js';
import { printOut } from '../log/terminal-text.js';
import { formatTable } from './format-table.js';

export function registerCheck(program: Command): void {
  program
    .command('check')
    .description(
      'Check the set-up without changing anything: the configuration, the database (reachable, migrated, who holds the run lock), and per source the API key and each endpoint (one small request each). One table; exit 0 when every check passed, else the most specific code: 3 key rejected, 5 database unreachable, 2 configuration (or a warehouse not migrated), 6 a file a run writes (INSIGHTS_METRICS_FILE) cannot be written, 1 an endpoint failing.',
    )
    .option('--json', 'print the checks as JSON (for scripts and monitoring)')
    .option('--strict', 'an INSIGHTS_* variable that is not a setting (a typo) fails the check (exit 2)')
    .addHelpText(
      'after',
      [
        '',
        'Reads every setting of every command (a bad INSIGHTS_SCHEDULE fails here, too), and a server',
        'database only (DATABASE_URL): it never starts the embedded one, never migrates, never writes.',
        'A database problem does not stop the API checks, nor the reverse: every row is filled.',
      ].join('\n'),
    )
    .action(async (options: { json?: boolean; strict?: boolean }) => {
      const { runChecks } = await import('../check/check-run.js');
      const report = await runChecks({ strict: options.strict === true });
      printOut(options.json ? `${JSON.stringify(report, null, 2)}\n` : renderChecks(report));
      process.exitCode = report.exitCode;
    });
}

/** The checks as a table, and the verdict under it. */
function renderChecks(report: CheckReport): string {
  const table = formatTable(
    ['check', 'subject', 'status', 'detail'],
    report.checks.map((row) => [row.check, row.subject, row.status, row.detail]),
  );
  const verdict = report.ok ? 'all checks passed' : `some checks failed (exit code ${report.exitCode})`;
  return `${table}\n\n${verdict}\n`;
}
