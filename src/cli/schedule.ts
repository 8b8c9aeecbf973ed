import type { Command } from 'commander';
import { embeddedOption } from './run-options.js';

export function registerSchedule(program: Command): void {
  program
    .command('schedule')
    .description(
      'Run the nightly sync until stopped: at INSIGHTS_SCHEDULE (cron, default "0 3 * * *") in INSIGHTS_TIMEZONE (default UTC), then the scrub: it verifies the least recently verified older days with what the sync left of INSIGHTS_SCRUB_REQUESTS_PER_NIGHT. One run at a time: a slot that comes during a run, or while another process holds the warehouse lock, is skipped and logged. SIGTERM/SIGINT stop it within INSIGHTS_SHUTDOWN_GRACE_MS.',
    )
    .option('--run-now', 'also run once at start, e.g. when a container starts')
    .addOption(embeddedOption())
    .action(async (options: { runNow?: boolean; embedded?: boolean }) => {
      const [{ commandContext }, { runSchedule }] = await Promise.all([
        import('./command-context.js'),
        import('./schedule-run.js'),
      ]);
      await runSchedule(
        commandContext({ requireSources: true, embedded: options.embedded, schedule: true }),
        {
          runNow: options.runNow === true,
        },
      );
    });
}
