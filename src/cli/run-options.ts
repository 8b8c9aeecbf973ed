import { type Command, Option } from 'commander';
import type { Config } from '../config/config.js';
import { CliError } from '../errors.js';
import { ALL_RESOURCES, type Resource } from '../schemas/resource-names.js';
import type { SyncRequest } from '../sync/run-sync.js';

const resourcesOption = () =>
  new Option(
    '--resources <list>',
    `comma-separated resources to load (${ALL_RESOURCES.join(', ')}); default all`,
  );
const sourceOption = () => new Option('--source <name>', 'only this configured source; default all');

function parseResources(value: string | undefined): Resource[] | undefined {
  if (value === undefined) return undefined;
  const names = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = names.filter((n) => !(ALL_RESOURCES as readonly string[]).includes(n));
  if (unknown.length > 0 || names.length === 0) {
    throw new CliError(
      `--resources: unknown resource ${unknown.join(', ') || '(empty)'}; expected some of ${ALL_RESOURCES.join(', ')}`,
    );
  }
  return names as Resource[];
}

function parseSource(config: Readonly<Config>, value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  if (!config.sources.some((s) => s.name === value)) {
    throw new CliError(
      `--source: no source named ${value}; configured: ${config.sources.map((s) => s.name).join(', ')}`,
    );
  }
  return [value];
}

/** Every command that opens the warehouse: the explicit choice of the embedded database. */
export const embeddedOption = () =>
  new Option(
    '--embedded',
    'without DATABASE_URL, use the embedded PostgreSQL under INSIGHTS_DATA_DIR (default .data/postgres), like INSIGHTS_EMBEDDED=1',
  );

const waitOption = () =>
  new Option('--wait', 'if another run holds the warehouse lock, wait for it instead of exiting (code 4)');

const queueOption = () =>
  new Option(
    '--queue',
    'send the windows as jobs to `insights-sync worker` processes (several machines) and wait for them, instead of running them here',
  );

/** What `sync` and `backfill` share on their command line. */
export interface RunCommandOptions {
  resources?: string;
  source?: string;
  wait?: boolean;
  queue?: boolean;
  embedded?: boolean;
}

export function addRunOptions(command: Command): Command {
  return command
    .addOption(resourcesOption())
    .addOption(sourceOption())
    .addOption(waitOption())
    .addOption(queueOption())
    .addOption(embeddedOption());
}

/**
 * Runs `sync` or `backfill` with those options. The settings are read first: a bad one ends the
 * command before the run's modules (database, API client, loaders) load.
 */
export async function runFromCommandLine(
  options: RunCommandOptions,
  request: Omit<SyncRequest, 'resources' | 'sources'>,
): Promise<void> {
  const resources = parseResources(options.resources);
  const { commandContext } = await import('./command-context.js');
  const context = commandContext({ requireSources: true, embedded: options.embedded });
  const sources = parseSource(context.config, options.source);
  const { executeRun } = await import('./sync-run.js');
  await executeRun(
    context,
    { ...request, resources, sources },
    { wait: options.wait === true, queue: options.queue === true },
  );
}
