import { Command, CommanderError } from 'commander';
import { InsightsError } from '../errors.js';
import { registerCommands } from './commands.js';

/**
 * Entry point of the `insights-sync` CLI. Each command lives in its own file under src/cli/;
 * this file only turns failures into one clear line and an exit code.
 */
export async function runCli(argv: string[]): Promise<number> {
  const program = new Command('insights-sync')
    .description('Copy a Website Insights service into a PostgreSQL warehouse.')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();
  registerCommands(program);
  try {
    await program.parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help and --version end through here with exit code 0.
      return error.exitCode;
    }
    if (error instanceof InsightsError) {
      process.stderr.write(`insights-sync: ${error.message}\n`);
      return error.exitCode;
    }
    process.stderr.write(
      `insights-sync: unexpected error\n${error instanceof Error ? error.stack : String(error)}\n`,
    );
    return 1;
  }
}
