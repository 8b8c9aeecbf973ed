import type { Command } from 'commander';
import { printOut } from '../log/terminal-text.js';
import { embeddedOption } from './run-options.js';

export function registerMigrate(program: Command): void {
  program
    .command('migrate')
    .description(
      'Create or upgrade the warehouse schema (INSIGHTS_SCHEMA, default insights). Safe to run again.',
    )
    .addOption(embeddedOption())
    .action(async (options: { embedded?: boolean }) => {
      const [{ commandContext }, { usingWarehouse }] = await Promise.all([
        import('./command-context.js'),
        import('./warehouse.js'),
      ]);
      const { config, logger } = commandContext({
        requireSources: false,
        embedded: options.embedded,
        usesPiiKey: false,
      });
      await usingWarehouse(
        config,
        logger,
        async ({ applied, displayUrl, embedded }) => {
          const what = applied.length === 0 ? 'nothing to apply' : `applied ${applied.join(', ')}`;
          printOut(`schema ${config.schema} is up to date: ${what}\n`);
          if (embedded) printOut(`embedded database: ${displayUrl}\n`);
        },
        { access: 'migrate' },
      );
    });
}
