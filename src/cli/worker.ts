import type { Command } from 'commander';
import { embeddedOption } from './run-options.js';

export function registerWorker(program: Command): void {
  program
    .command('worker')
    .description(
      "Run the window jobs that `sync --queue` and `backfill --queue` send (and `schedule` with INSIGHTS_SCHEDULE_QUEUE=true), until stopped; one or more per machine, against the same warehouse. Bounds: INSIGHTS_WORKER_CONCURRENCY windows in this process, INSIGHTS_SOURCE_CONCURRENCY per source across all workers, and INSIGHTS_SOURCE_RPS (or a source's requests_per_second) requests per second per source across every process.",
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
