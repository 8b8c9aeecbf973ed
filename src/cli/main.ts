import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { InsightsError } from '../errors.js';
import { oneLine, printErr } from '../log/terminal-text.js';
import { registerCommands } from './commands.js';

/**
 * Entry point of the `insights-sync` CLI. Each command lives in its own file under src/cli/;
 * this file only turns failures into one clear line and an exit code.
 *
 * The command definitions (names, options, help) load eagerly and cheaply; each command's action
 * imports its modules when it runs, so `--help` loads no database driver, web server or chart
 * library (test/operations/lazy-commands.test.ts).
 */
export async function runCli(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help and --version end through here with exit code 0; every other end commander
      // decides (unknown option or command, missing argument or command) is a usage error.
      return SUCCESSFUL_ENDS.has(error.code) ? 0 : USAGE_EXIT_CODE;
    }
    if (error instanceof InsightsError) {
      // One line, whatever a name from the database or an argument that it quotes holds.
      printErr(`insights-sync: ${oneLine(error.message)}\n`);
      return error.exitCode;
    }
    printErr(`insights-sync: unexpected error\n${error instanceof Error ? error.stack : String(error)}\n`);
    return 1;
  }
}

/**
 * The whole command tree, with no action run. The program itself has no option that takes a
 * value, so the first argument that is not an option is always the command: bin/launch.js relies
 * on that to choose a heap limit before any of this code loads (test/operations/launcher-command.test.ts).
 */
export function buildProgram(): Command {
  const program = new Command('insights-sync')
    .description('Copy a Website Insights service into a PostgreSQL warehouse.')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();
  registerCommands(program);
  withVersion(program, packageVersion());
  return program;
}

/** Commander's ends that are not errors. */
const SUCCESSFUL_ENDS = new Set(['commander.helpDisplayed', 'commander.version']);
const USAGE_EXIT_CODE = 2;

/** `--version` on the program and on every command. */
function withVersion(command: Command, version: string): void {
  command.version(version, '-V, --version', 'print the version of insights-sync');
  for (const sub of command.commands) withVersion(sub, version);
}

/**
 * The version in package.json, read as text (no JSON module import): the nearest package.json of
 * this package above this file, wherever the build puts it.
 */
function packageVersion(): string {
  for (let up = '../../'; up.length < 30; up += '../') {
    try {
      const found = JSON.parse(readFileSync(new URL(`${up}package.json`, import.meta.url), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (found.name === 'insights-sync' && found.version !== undefined) return found.version;
    } catch {
      // Not here: one folder up.
    }
  }
  return 'unknown';
}
