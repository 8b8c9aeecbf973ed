import type { Command } from 'commander';
import { embeddedOption } from './run-options.js';

export function registerDbtSources(program: Command): void {
  program
    .command('dbt-sources')
    .description(
      "Write dbt's sources.yml from the live schema: every table and view with its column descriptions, key tests and freshness.",
    )
    .option('--out <file>', 'the file to write, e.g. models/sources.yml (default: stdout)')
    .addOption(embeddedOption())
    .action(async (options: { out?: string; embedded?: boolean }) => {
      const [{ commandContext }, { runDbtSources }] = await Promise.all([
        import('./command-context.js'),
        import('./dbt-sources-run.js'),
      ]);
      await runDbtSources(
        { out: options.out },
        commandContext({ requireSources: false, embedded: options.embedded, usesPiiKey: false }),
      );
    });
}
