import path from 'node:path';
import type { Command } from 'commander';
import { Option } from 'commander';
import { CliError, OutputWriteError } from '../errors.js';
import { printOut } from '../log/terminal-text.js';
import { embeddedOption } from './run-options.js';
import { writeOutputFile } from './write-output-file.js';

const DEFAULT_DAYS = 30;
const MAX_DAYS = 3660;

export function registerReport(program: Command): void {
  program
    .command('report')
    .description(
      'Write one self-contained HTML page of charts (test results with intervals and daily trend, feedback, survey answers, recordings) and the sync health table. Opens without a network.',
    )
    .requiredOption('--out <file>', 'the HTML file to write, e.g. report.html')
    .addOption(new Option('--source <name>', 'only this source; default all sources in the warehouse'))
    .addOption(
      new Option(
        '--from <YYYY-MM-DD>',
        `first UTC day of the daily charts; default ${DEFAULT_DAYS - 1} days before --to`,
      ),
    )
    .addOption(new Option('--to <YYYY-MM-DD>', 'last UTC day of the daily charts; default today'))
    .addOption(embeddedOption())
    .action(
      async (options: { out: string; source?: string; from?: string; to?: string; embedded?: boolean }) => {
        const { addDays, dayDiff, todayUtc } = await import('../time/days.js');
        const to = options.to === undefined ? todayUtc(new Date()) : parseDay('--to', options.to);
        const from =
          options.from === undefined ? addDays(to, 1 - DEFAULT_DAYS) : parseDay('--from', options.from);
        if (from > to) throw new CliError(`--from ${from} is after --to ${to}`);
        if (dayDiff(from, to) >= MAX_DAYS) throw new CliError(`--from .. --to: at most ${MAX_DAYS} days`);
        // chart.js and the page's code load only when a report is written.
        const [{ commandContext }, { usingWarehouse }, { READ_STATEMENT_TIMEOUT_MS }, { buildReport }] =
          await Promise.all([
            import('./command-context.js'),
            import('./warehouse.js'),
            import('../db/connection.js'),
            import('../report/build-report.js'),
          ]);
        const { config, logger } = commandContext({
          requireSources: false,
          embedded: options.embedded,
          usesPiiKey: false,
        });
        const { html, data } = await usingWarehouse(
          config,
          logger,
          async ({ db }) => {
            if (options.source !== undefined) {
              const known = (
                await db.selectFrom('sources').select('source_id').orderBy('source_id').execute()
              ).map((s) => s.source_id);
              if (!known.includes(options.source))
                throw new CliError(
                  `--source: the warehouse has no source named ${options.source}; it has ${known.join(', ') || 'none yet'}`,
                );
            }
            return buildReport(db, {
              from,
              to,
              source: options.source,
            });
          },
          // Read-only: a database that stops answering ends it with exit 5, not a hang.
          { access: 'read', statementTimeoutMs: READ_STATEMENT_TIMEOUT_MS },
        );
        const out = path.resolve(options.out);
        // Only its owner may read it: it holds what visitors wrote.
        await writeOutputFile(out, html, 0o600).catch((error: unknown) => {
          throw new OutputWriteError(options.out, error);
        });
        printOut(
          `wrote ${options.out} (${Math.round(html.length / 1024)} KB): ${from} to ${to}, ${data.sources.length} source(s), ${data.totals.feedback} feedback items, ${data.abResults.length + data.personalizationResults.length} test variants\n`,
        );
      },
    );
}

function parseDay(option: string, value: string): string {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value) || Number.isNaN(Date.parse(`${value}T00:00:00Z`)))
    throw new CliError(`${option}: expected a date YYYY-MM-DD, got ${value}`);
  // Date.parse accepts 2026-02-30 as March 2; a real day survives the round trip.
  if (new Date(`${value}T00:00:00Z`).toISOString().slice(0, 10) !== value)
    throw new CliError(`${option}: ${value} is not a day of the calendar`);
  return value;
}
