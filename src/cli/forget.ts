import type { Command } from 'commander';
import { Option } from 'commander';
import { CliError } from '../errors.js';
import { printOut, terminalColumns } from '../log/terminal-text.js';
import type { ListedSuppression } from '../privacy/suppression.js';
import { formatTable } from './format-table.js';
import { embeddedOption } from './run-options.js';

export function registerForget(program: Command): void {
  program
    .command('forget')
    .description(
      "For an erasure request: delete a visitor and every row of theirs (feedback, survey answers, webhook deliveries, rejected items) in one transaction, and put them on the suppression list, so no later sync or webhook delivery stores them again (`unforget` undoes it). Under pii hash or drop, INSIGHTS_PII_KEY finds the visitor's pseudonym. --list prints the suppression list.",
    )
    .addOption(new Option('--visitor <id>', "the visitor's id as the service knows it").conflicts('list'))
    .addOption(
      new Option(
        '--list',
        'print the suppression list (the ids as stored: pseudonyms under pii hash or drop)',
      ),
    )
    .addOption(new Option('--source <name>', 'only this source; default every source'))
    .addOption(
      new Option(
        '--not-seen-yet',
        'put an id that matches no row on the suppression list all the same (a visitor not loaded yet); without it such an id changes nothing and exits 1, as a typo would',
      ).conflicts('list'),
    )
    .addOption(embeddedOption())
    .action(
      async (options: {
        visitor?: string;
        list?: boolean;
        source?: string;
        embedded?: boolean;
        notSeenYet?: boolean;
      }) => {
        if (options.list) return printList(options.source, options.embedded);
        if (options.visitor === undefined) throw new CliError('expected --visitor ID, or --list');
        if (options.visitor.trim() === '') throw new CliError('--visitor: expected a visitor id');
        const visitorId = options.visitor;
        const [{ commandContext }, { usingWarehouse }, { forget }] = await Promise.all([
          import('./command-context.js'),
          import('./warehouse.js'),
          import('../privacy/forget-visitor.js'),
        ]);
        const { config, logger } = commandContext({ requireSources: false, embedded: options.embedded });
        const outcome = await usingWarehouse(config, logger, ({ db }) =>
          forget(db, {
            visitorId,
            sources: config.sources,
            source: options.source,
            piiKey: config.piiKey,
            unseen: options.notSeenYet ? 'suppress' : 'refuse',
          }),
        );
        // The id is not echoed: this output may end up in a log.
        const { deleted, suppressed } = outcome;
        const total = Object.values(deleted).reduce((sum, n) => sum + n, 0);
        const counts = Object.entries(deleted)
          .map(([table, n]) => `${table} ${n}`)
          .join(', ');
        printOut(`deleted ${total} rows of the visitor: ${counts}\n`);
        const sources = suppressed.map((s) => `${s.sourceId}${s.hashed ? ' (pseudonym)' : ''}`).join(', ');
        printOut(
          suppressed.length === 0
            ? 'no source known yet: nothing put on the suppression list (name one with --source)\n'
            : `on the suppression list of ${sources}: later syncs and webhook deliveries store nothing of the visitor (\`unforget --visitor\` undoes this)\n`,
        );
        if (total === 0 && config.piiKey === undefined)
          printOut(
            'no row matched; if a source hashes visitor ids (pii hash or drop), set INSIGHTS_PII_KEY so the pseudonym can be found\n',
          );
      },
    );
}

async function printList(source: string | undefined, embedded: boolean | undefined): Promise<void> {
  const [{ commandContext }, { usingWarehouse }, { listSuppressions }] = await Promise.all([
    import('./command-context.js'),
    import('./warehouse.js'),
    import('../privacy/suppression.js'),
  ]);
  const { config, logger } = commandContext({ requireSources: false, embedded, usesPiiKey: false });
  const entries = await usingWarehouse(config, logger, ({ db }) => listSuppressions(db, source), {
    access: 'read',
  });
  printOut(renderSuppressions(entries));
}

function renderSuppressions(entries: readonly ListedSuppression[]): string {
  if (entries.length === 0) return 'the suppression list is empty\n';
  const table = formatTable(
    ['source', 'visitor (as stored)', 'form', 'forgotten at'],
    entries.map((e) => [e.sourceId, e.visitorId, e.hashed ? 'pseudonym' : 'id', e.forgottenAt.toISOString()]),
    terminalColumns(process.stdout),
  );
  return `${table}\n${entries.length} ${entries.length === 1 ? 'entry' : 'entries'}\n`;
}
