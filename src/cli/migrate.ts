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
          printOut(`${describeMigrate(config.schema, applied)}\n`);
          if (embedded) printOut(`embedded database: ${displayUrl}\n`);
        },
        { access: 'migrate' },
      );
    });
}

/** What `migrate` did, in one line: nothing, one migration, or how many from which to which. */
export function describeMigrate(schema: string, applied: readonly string[]): string {
  const [first, last] = [applied[0], applied.at(-1)];
  if (first === undefined || last === undefined) return `schema ${schema} is up to date: nothing to apply`;
  if (applied.length === 1) return `schema ${schema} upgraded: applied ${first}`;
  return `schema ${schema} upgraded: applied ${applied.length} migrations, ${first} to ${last}`;
}
