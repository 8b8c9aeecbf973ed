import { type Command, Option } from 'commander';
import { CliError } from '../errors.js';
import { printProseErr } from '../log/terminal-text.js';
import type { WindowedResource } from '../schemas/resource-names.js';
import { embeddedOption } from './run-options.js';

interface VerifyOptions {
  from: string;
  to?: string;
  source?: string;
  resources?: string;
  dryRun?: boolean;
  json?: boolean;
  wait?: boolean;
  embedded?: boolean;
}

export function registerVerify(program: Command): void {
  program
    .command('verify')
    .description(
      'Read settled days again, with the same requests and proofs as a sync, and compare them with the warehouse: per day and resource, the items it lacked (now stored), the items that changed (rewritten), the rows the service no longer serves (marked missing upstream on two whole reads, kept) and the items whose dt moved. Exit codes as a sync.',
    )
    .addOption(new Option('--from <YYYY-MM-DD>', 'first day (UTC)').makeOptionMandatory())
    .addOption(new Option('--to <YYYY-MM-DD>', 'last day (UTC), included; default and at most yesterday'))
    .addOption(new Option('--source <name>', 'only this configured source; default all'))
    .addOption(
      new Option(
        '--resources <list>',
        'comma-separated day-windowed resources (feedback, survey, recordings); default all',
      ),
    )
    .option(
      '--dry-run',
      'report what it finds without keeping any of it (everything runs in one transaction, rolled back)',
    )
    .option('--json', 'print the findings as JSON (for scripts and monitoring)')
    .option('--wait', 'if another run holds the warehouse lock, wait for it instead of exiting (code 4)')
    .addOption(embeddedOption())
    .action(async (options: VerifyOptions) => {
      const [{ todayUtc, addDays, minDay }, { WINDOWED_RESOURCES }] = await Promise.all([
        import('../time/days.js'),
        import('../schemas/resource-names.js'),
      ]);
      const resources = parseWindowed(options.resources, WINDOWED_RESOURCES);
      const yesterday = addDays(todayUtc(new Date()), -1);
      const from = await parseDay('--from', options.from);
      const asked = options.to === undefined ? yesterday : await parseDay('--to', options.to);
      // Only settled days: today is still being written (the nightly sync reads it).
      if (asked > yesterday)
        printProseErr(`insights-sync: --to ${asked} is not a settled day: verify stops at ${yesterday}\n`);
      const to = minDay(asked, yesterday);
      if (from > to) throw new CliError(`--from ${from} is after --to ${to}: no settled day to verify`);
      const { commandContext } = await import('./command-context.js');
      const context = commandContext({ requireSources: true, embedded: options.embedded });
      if (options.source !== undefined && !context.config.sources.some((s) => s.name === options.source))
        throw new CliError(
          `--source: no source named ${options.source}; configured: ${context.config.sources.map((s) => s.name).join(', ')}`,
        );
      const { executeVerify } = await import('./verify-run.js');
      await executeVerify(
        context,
        {
          from,
          to,
          ...(resources === undefined ? {} : { resources }),
          ...(options.source === undefined ? {} : { sources: [options.source] }),
        },
        { dryRun: options.dryRun === true, json: options.json === true, wait: options.wait === true },
      );
    });
}

function parseWindowed(
  value: string | undefined,
  windowed: readonly WindowedResource[],
): WindowedResource[] | undefined {
  if (value === undefined) return undefined;
  const names = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = names.filter((n) => !(windowed as readonly string[]).includes(n));
  if (unknown.length > 0 || names.length === 0)
    throw new CliError(
      `--resources: ${unknown.join(', ') || '(empty)'} has no days to verify; expected some of ${windowed.join(', ')}`,
    );
  return names as WindowedResource[];
}

async function parseDay(option: string, value: string): Promise<string> {
  const { daySchema } = await import('../schemas/timestamp.js');
  if (!daySchema.safeParse(value).success)
    throw new CliError(`${option}: expected a date YYYY-MM-DD, got ${JSON.stringify(value)}`);
  return value;
}
