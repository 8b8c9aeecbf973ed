import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { READ_STATEMENT_TIMEOUT_MS } from '../db/connection.js';
import { writeDbtSources } from '../dbt/dbt-sources.js';
import { OutputWriteError } from '../errors.js';
import { printOut } from '../log/terminal-text.js';
import type { CommandContext } from './command-context.js';
import { usingWarehouse } from './warehouse.js';
import { writeOutputFile } from './write-output-file.js';

export interface DbtSourcesCommandOptions {
  /** The file to write, e.g. models/sources.yml; unset: stdout. */
  out?: string;
}

/**
 * `insights-sync dbt-sources [--out FILE]`: writes dbt's sources.yml from the live schema
 * (src/dbt/dbt-sources.ts); registered in dbt-sources.ts, loaded when the command runs.
 */
export async function runDbtSources(
  options: DbtSourcesCommandOptions,
  context: CommandContext,
): Promise<void> {
  const { config, logger } = context;
  const text = await usingWarehouse(
    config,
    logger,
    ({ pool }) => writeDbtSources(pool, config.schema),
    // Catalog reads only: a database that stops answering ends it with exit 5, not a hang.
    { statementTimeoutMs: READ_STATEMENT_TIMEOUT_MS, access: 'read' },
  );
  if (options.out === undefined) {
    printOut(text);
    return;
  }
  const out = path.resolve(options.out);
  try {
    await mkdir(path.dirname(out), { recursive: true });
    // Table and column names only: readable by the dbt project's other users.
    await writeOutputFile(out, text, 0o644);
  } catch (error) {
    throw new OutputWriteError(options.out, error);
  }
  const tables = (text.match(/^ {6}- name: /gm) ?? []).length;
  printOut(`wrote ${options.out}: source ${config.schema}, ${tables} tables and views\n`);
}
