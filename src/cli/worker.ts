import type { Command } from 'commander';
import { embeddedOption } from './run-options.js';

export function registerWorker(program: Command): void {
  program
    .command('worker')
    .description(
      'Take window jobs from the queue until stopped: the windows that `sync --queue`, `backfill --queue` (and `schedule` with INSIGHTS_SCHEDULE_QUEUE=true) send. Run one on each of several machines against the same warehouse. At most INSIGHTS_WORKER_CONCURRENCY windows at once here, and INSIGHTS_SOURCE_CONCURRENCY per source across every worker. SIGTERM/SIGINT: no new job; windows in hand finish within INSIGHTS_SHUTDOWN_GRACE_MS.',
    )
    .addOption(embeddedOption())
    .action(async (options: { embedded?: boolean }) => {
      // The settings first: a bad one ends the command before the queue's modules load.
      const { commandContext } = await import('./command-context.js');
      const context = commandContext({ requireSources: true, embedded: options.embedded });
      const { runWorkerCommand } = await import('./worker-run.js');
      await runWorkerCommand(context);
    });
}
