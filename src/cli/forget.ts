import type { Command } from 'commander';
import { Option } from 'commander';
import { CliError } from '../errors.js';
import { forgetVisitor } from '../privacy/forget-visitor.js';
import { commandContext } from './command-context.js';
import { usingWarehouse } from './warehouse.js';

export function registerForget(program: Command): void {
  program
    .command('forget')
    .description(
      "For an erasure request: delete a visitor and every row of theirs (feedback, survey answers, webhook deliveries, rejected items) in one transaction. Under pii hash or drop, INSIGHTS_PII_KEY finds the visitor's pseudonym. The service keeps its own copy: a later backfill of those days would load them again.",
    )
    .addOption(new Option('--visitor <id>', "the visitor's id as the service knows it").makeOptionMandatory())
    .addOption(new Option('--source <name>', 'only this source; default every source'))
    .action(async (options: { visitor: string; source?: string }) => {
      if (options.visitor.trim() === '') throw new CliError('--visitor: expected a visitor id');
      const { config, logger } = commandContext({ requireSources: false });
      const deleted = await usingWarehouse(config, logger, ({ db }) =>
        forgetVisitor(db, {
          visitorId: options.visitor,
          ...(options.source === undefined ? {} : { source: options.source }),
          ...(config.piiKey === undefined ? {} : { piiKey: config.piiKey }),
        }),
      );
      // The id is not echoed: this output may end up in a log.
      const total = Object.values(deleted).reduce((sum, n) => sum + n, 0);
      const counts = Object.entries(deleted)
        .map(([table, n]) => `${table} ${n}`)
        .join(', ');
      process.stdout.write(`deleted ${total} rows of the visitor: ${counts}\n`);
      if (total === 0 && config.piiKey === undefined)
        process.stdout.write(
          'no row matched; if a source hashes visitor ids (pii hash or drop), set INSIGHTS_PII_KEY so the pseudonym can be found\n',
        );
    });
}
