import { type Command, Option } from 'commander';
import { CliError } from '../errors.js';
import { printProse, printProseErr } from '../log/terminal-text.js';
import { addRunOptions, type RunCommandOptions, runFromCommandLine } from './run-options.js';

export function registerBackfill(program: Command): void {
  addRunOptions(
    program
      .command('backfill')
      .description(
        'Load every day of a range, whatever the watermarks say. Never moves a watermark back; moves it forward where the range closes a gap.',
      )
      .addOption(new Option('--from <YYYY-MM-DD>', 'first day (UTC)').makeOptionMandatory())
      .addOption(
        new Option('--to <YYYY-MM-DD>', 'last day (UTC), included; default today').default(undefined),
      ),
  ).action(async (options: RunCommandOptions & { from: string; to?: string }) => {
    const { todayUtc } = await import('../time/days.js');
    const from = await parseDay('--from', options.from);
    const to = options.to === undefined ? todayUtc(new Date()) : await parseDay('--to', options.to);
    if (from > to) throw new CliError(`--from ${from} is after --to ${to}`);
    // A day after today (UTC) has nothing to load yet: said, not run as an empty "ok".
    const today = todayUtc(new Date());
    if (from > today) {
      printProse(
        `nothing to backfill: ${from}..${to} is after today (UTC, ${today}); no day of it has happened yet\n`,
      );
      return;
    }
    if (to > today)
      printProseErr(`insights-sync: --to ${to} is after today (UTC): the backfill stops at ${today}\n`);
    await runFromCommandLine(options, { trigger: 'backfill', range: { from, to } });
  });
}

async function parseDay(option: string, value: string): Promise<string> {
  const { daySchema } = await import('../schemas/timestamp.js');
  if (!daySchema.safeParse(value).success)
    throw new CliError(`${option}: expected a date YYYY-MM-DD, got ${JSON.stringify(value)}`);
  return value;
}
