import { type Command, Option } from 'commander';
import { CliError } from '../errors.js';
import {
  embeddedOption,
  parseResources,
  parseSource,
  queueOption,
  resourcesOption,
  sourceOption,
  waitOption,
} from './run-options.js';

export function registerBackfill(program: Command): void {
  program
    .command('backfill')
    .description(
      'Load every day of a range, whatever the watermarks say. Never moves a watermark back; moves it forward where the range closes a gap.',
    )
    .addOption(new Option('--from <YYYY-MM-DD>', 'first day (UTC)').makeOptionMandatory())
    .addOption(new Option('--to <YYYY-MM-DD>', 'last day (UTC), included; default today').default(undefined))
    .addOption(resourcesOption())
    .addOption(sourceOption())
    .addOption(waitOption())
    .addOption(queueOption())
    .addOption(embeddedOption())
    .action(
      async (options: {
        from: string;
        to?: string;
        resources?: string;
        source?: string;
        wait?: boolean;
        queue?: boolean;
        embedded?: boolean;
      }) => {
        const { todayUtc } = await import('../time/days.js');
        const from = await parseDay('--from', options.from);
        const to = options.to === undefined ? todayUtc(new Date()) : await parseDay('--to', options.to);
        if (from > to) throw new CliError(`--from ${from} is after --to ${to}`);
        // A day after today (UTC) has nothing to load yet: said, not run as an empty "ok".
        const today = todayUtc(new Date());
        if (from > today) {
          process.stdout.write(
            `nothing to backfill: ${from}..${to} is after today (UTC, ${today}); no day of it has happened yet\n`,
          );
          return;
        }
        if (to > today)
          process.stderr.write(
            `insights-sync: --to ${to} is after today (UTC): the backfill stops at ${today}\n`,
          );
        const resources = parseResources(options.resources);
        // The settings first: a bad one ends the command before the run's modules load.
        const { commandContext } = await import('./command-context.js');
        const context = commandContext({ requireSources: true, embedded: options.embedded });
        const sources = parseSource(context.config, options.source);
        const { executeRun } = await import('./run-command.js');
        await executeRun(
          context,
          {
            trigger: 'backfill',
            range: { from, to },
            resources: resources,
            sources: sources,
          },
          { wait: options.wait === true, queue: options.queue === true },
        );
      },
    );
}

async function parseDay(option: string, value: string): Promise<string> {
  const { daySchema } = await import('../schemas/timestamp.js');
  if (!daySchema.safeParse(value).success)
    throw new CliError(`${option}: expected a date YYYY-MM-DD, got ${JSON.stringify(value)}`);
  return value;
}
