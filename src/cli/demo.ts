import type { Command } from 'commander';
import { Option } from 'commander';
import { CliError } from '../errors.js';

/**
 * The whole product on one machine with nothing installed: the simulator stands in for the
 * service, the embedded PostgreSQL for the warehouse (unless DATABASE_URL is set).
 */
export function registerDemo(program: Command): void {
  program
    .command('demo')
    .description(
      'Start the simulator, backfill the last N days into the warehouse (embedded PostgreSQL unless DATABASE_URL is set), run a sync, print what was loaded and two example queries. Safe to run again.',
    )
    .addOption(new Option('--days <n>', 'days to backfill, ending today (UTC)').default('30'))
    .addOption(new Option('--seed <n>', 'simulator seed').default('1'))
    .option('--keep-running', 'then keep the warehouse up for psql or a BI tool until Ctrl+C')
    .action(async (options: { days: string; seed: string; keepRunning?: boolean }) => {
      const days = Number(options.days);
      const seed = Number(options.seed);
      if (!Number.isInteger(days) || days < 1 || days > 3650)
        throw new CliError('--days: expected an integer 1-3650');
      if (!Number.isInteger(seed)) throw new CliError('--seed: expected an integer');
      const { runDemo } = await import('./demo-run.js');
      await runDemo({ days, seed, keepRunning: options.keepRunning === true });
    });
}
