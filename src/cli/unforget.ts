import type { Command } from 'commander';
import { Option } from 'commander';
import { CliError } from '../errors.js';
import { printOut } from '../log/terminal-text.js';
import { embeddedOption } from './run-options.js';

export function registerUnforget(program: Command): void {
  program
    .command('unforget')
    .description(
      "Take a visitor off the suppression list that `forget` put them on: later syncs and webhook deliveries store them again. Nothing deleted comes back by itself: the next sync reloads the lookback days, a backfill older ones. Under pii hash or drop, INSIGHTS_PII_KEY finds the visitor's pseudonym.",
    )
    .addOption(new Option('--visitor <id>', "the visitor's id as the service knows it").makeOptionMandatory())
    .addOption(new Option('--source <name>', 'only this source; default every source'))
    .addOption(embeddedOption())
    .action(async (options: { visitor: string; source?: string; embedded?: boolean }) => {
      if (options.visitor.trim() === '') throw new CliError('--visitor: expected a visitor id');
      const [{ commandContext }, { usingWarehouse }, { hmac }, { removeSuppressions }] = await Promise.all([
        import('./command-context.js'),
        import('./warehouse.js'),
        import('../privacy/pii.js'),
        import('../privacy/suppression.js'),
      ]);
      const { config, logger } = commandContext({ requireSources: false, embedded: options.embedded });
      const visitorIds =
        config.piiKey === undefined
          ? [options.visitor]
          : [options.visitor, hmac(config.piiKey, options.visitor)];
      const removed = await usingWarehouse(config, logger, ({ db }) =>
        removeSuppressions(db, {
          visitorIds,
          source: options.source,
        }),
      );
      // The id is not echoed: this output may end up in a log.
      if (removed.length === 0) {
        printOut('the visitor was not on the suppression list\n');
        if (config.piiKey === undefined)
          printOut(
            'if a source hashes visitor ids (pii hash or drop), set INSIGHTS_PII_KEY so the pseudonym can be found\n',
          );
        return;
      }
      const sources = [...new Set(removed.map((entry) => entry.sourceId))].sort().join(', ');
      printOut(
        `removed from the suppression list of ${sources}: the next sync stores the visitor's items of the lookback days again, a backfill older days\n`,
      );
    });
}
