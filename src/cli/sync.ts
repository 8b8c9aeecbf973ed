import type { Command } from 'commander';
import { parseResources, parseSource, resourcesOption, sourceOption, waitOption } from './run-options.js';

export function registerSync(program: Command): void {
  program
    .command('sync')
    .description(
      'Bring the warehouse up to date: every day not yet done since the watermark (plus a lookback for late items), through today UTC, and a snapshot of tests, results and heatmaps.',
    )
    .addOption(resourcesOption())
    .addOption(sourceOption())
    .addOption(waitOption())
    .action(async (options: { resources?: string; source?: string; wait?: boolean }) => {
      const resources = parseResources(options.resources);
      // The run's modules (database, API client, loaders) load only when a command runs.
      const [{ commandContext }, { executeRun }] = await Promise.all([
        import('./command-context.js'),
        import('./run-command.js'),
      ]);
      const context = commandContext({ requireSources: true });
      const sources = parseSource(context.config, options.source);
      await executeRun(
        context,
        {
          trigger: 'sync',
          ...(resources === undefined ? {} : { resources }),
          ...(sources === undefined ? {} : { sources }),
        },
        { wait: options.wait === true },
      );
    });
}
