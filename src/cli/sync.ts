import type { Command } from 'commander';
import {
  embeddedOption,
  parseResources,
  parseSource,
  queueOption,
  resourcesOption,
  sourceOption,
  waitOption,
} from './run-options.js';

export function registerSync(program: Command): void {
  program
    .command('sync')
    .description(
      'Bring the warehouse up to date: every day not yet done since the watermark (plus a lookback for late items), through today UTC, and a snapshot of tests, results and heatmaps.',
    )
    .addOption(resourcesOption())
    .addOption(sourceOption())
    .addOption(waitOption())
    .addOption(queueOption())
    .addOption(embeddedOption())
    .action(
      async (options: {
        resources?: string;
        source?: string;
        wait?: boolean;
        queue?: boolean;
        embedded?: boolean;
      }) => {
        const resources = parseResources(options.resources);
        // The run's modules (database, API client, loaders) load only when a command runs.
        // The settings first: a bad one ends the command before the run's modules load.
        const { commandContext } = await import('./command-context.js');
        const context = commandContext({ requireSources: true, embedded: options.embedded });
        const sources = parseSource(context.config, options.source);
        const { executeRun } = await import('./run-command.js');
        await executeRun(
          context,
          {
            trigger: 'sync',
            resources: resources,
            sources: sources,
          },
          { wait: options.wait === true, queue: options.queue === true },
        );
      },
    );
}
