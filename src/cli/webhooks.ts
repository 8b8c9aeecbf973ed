import type { Command } from 'commander';
import { Option } from 'commander';
import { CliError } from '../errors.js';
import { printOut } from '../log/terminal-text.js';
import { embeddedOption } from './run-options.js';

export function registerWebhooks(program: Command): void {
  const webhooks = program
    .command('webhooks')
    .description('Work with the stored webhook deliveries (the webhook_events table).');
  webhooks
    .command('replay')
    .description(
      'Re-apply stored deliveries with the rules of this version (e.g. after a fix): a rejected delivery that passes now is applied; applying again what was applied changes nothing. The API sync stays authoritative.',
    )
    .addOption(
      new Option(
        '--since <when>',
        'deliveries first received at or after this UTC day (YYYY-MM-DD) or ISO time',
      ),
    )
    .addOption(
      new Option('--status <status>', 'only deliveries with this status').choices(['applied', 'rejected']),
    )
    .addOption(new Option('--source <name>', 'only this source'))
    .addOption(embeddedOption())
    .action(
      async (options: {
        since?: string;
        status?: 'applied' | 'rejected';
        source?: string;
        embedded?: boolean;
      }) => {
        const since = options.since === undefined ? undefined : await parseSince(options.since);
        const [{ commandContext }, { usingWarehouse }, { replayDeliveries }, { RECEIVER_TIMEOUTS }] =
          await Promise.all([
            import('./command-context.js'),
            import('./warehouse.js'),
            import('../webhooks/replay.js'),
            import('../webhooks/receiver-timeouts.js'),
          ]);
        const { config, logger } = commandContext({ requireSources: false, embedded: options.embedded });
        // The serve role's command: the receiver's bounds on what it holds.
        const result = await usingWarehouse(
          config,
          logger,
          ({ pool, db }) =>
            replayDeliveries(pool, db, {
              since: since,
              status: options.status,
              source: options.source,
            }),
          RECEIVER_TIMEOUTS,
        );
        printOut(
          `replayed ${result.replayed} deliveries: ${result.applied} applied, ${result.rejected} rejected` +
            ` (${result.nowApplied} rejected before and applied now, ${result.nowRejected} applied before and rejected now)\n`,
        );
      },
    );
}

async function parseSince(value: string): Promise<Date> {
  const { daySchema } = await import('../schemas/timestamp.js');
  if (daySchema.safeParse(value).success) return new Date(`${value}T00:00:00.000Z`);
  // An ISO time with its offset; a bare local time would depend on the machine's time zone.
  if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(value)) {
    const time = new Date(value);
    if (!Number.isNaN(time.getTime())) return time;
  }
  throw new CliError(
    `--since: expected a day YYYY-MM-DD or an ISO time with Z or an offset, got ${JSON.stringify(value)}`,
  );
}
