import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { InsightsError, OutputWriteError, writeFailureWins } from '../errors.js';
import { oneLine, printErr, printProseErr } from '../log/terminal-text.js';
import { registerCommands } from './commands.js';
import { ignoreFailures, watchOutput } from './output-watch.js';

/**
 * Entry point of the `insights-sync` CLI. Each command lives in its own file under src/cli/;
 * this file only turns failures into one clear line and an exit code.
 *
 * The command definitions (names, options, help) load eagerly and cheaply; each command's action
 * imports its modules when it runs, so `--help` loads no database driver, web server or chart
 * library (test/cli/lazy-commands.test.ts).
 */
export async function runCli(argv: string[]): Promise<number> {
  const stdout = watchOutput(process.stdout);
  ignoreFailures(process.stderr);
  try {
    const end = await runProgram(argv);
    const lost = await stdout.settled();
    const final =
      lost !== undefined && end.unexpected !== true && writeFailureWins(end.code)
        ? endOf(new OutputWriteError('standard output', lost))
        : end;
    // A stack trace keeps its lines as they are; a sentence is broken between words.
    if (final.line !== undefined) (final.unexpected ? printErr : printProseErr)(final.line);
    return final.code;
  } finally {
    stdout.stop();
  }
}

/** How a command ended: its exit code, and the one line (or stack trace) to end with. */
interface End {
  code: number;
  line?: string;
  /** A bug: its stack trace stays, whatever else failed. */
  unexpected?: boolean;
}

async function runProgram(argv: string[]): Promise<End> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    return { code: typeof process.exitCode === 'number' ? process.exitCode : 0 };
  } catch (error) {
    return endOf(error);
  }
}

/** The one mapping from a failure to its exit code and line (README "Exit codes"). */
function endOf(error: unknown): End {
  if (error instanceof CommanderError) {
    // --help and --version end through here with exit code 0; every other end commander
    // decides (unknown option or command, missing argument or command) is a usage error. Commander
    // has printed its own line.
    if (SUCCESSFUL_ENDS.has(error.code)) return { code: 0 };
    // `help` asked for it (exit code 0); no command at all is a usage error, and commander printed
    // the help with no line of its own saying why it stopped.
    if (error.code === 'commander.help')
      return error.exitCode === 0
        ? { code: 0 }
        : {
            code: USAGE_EXIT_CODE,
            line: 'insights-sync: no command given (the commands are listed above)\n',
          };
    return { code: USAGE_EXIT_CODE };
  }
  if (error instanceof InsightsError) {
    // One line, whatever a name from the database or an argument that it quotes holds.
    return { code: error.exitCode, line: `insights-sync: ${oneLine(error.message)}\n` };
  }
  return {
    code: 1,
    unexpected: true,
    line: `insights-sync: unexpected error\n${error instanceof Error ? error.stack : String(error)}\n`,
  };
}

/**
 * The whole command tree, with no action run. The program itself has no option that takes a
 * value, so the first argument that is not an option is always the command: bin/launch.js relies
 * on that to choose a heap limit before any of this code loads (test/cli/launcher-command.test.ts).
 */
export function buildProgram(): Command {
  const program = new Command('insights-sync')
    .description('Copy a Website Insights service into a PostgreSQL warehouse.')
    .showHelpAfterError('(run with --help for usage)')
    .configureOutput({ outputError: (text, write) => write(usageLine(text)) })
    .exitOverride();
  registerCommands(program);
  withVersion(program, packageVersion());
  return program;
}

/**
 * Commander's own errors (`error: unknown option '--colour'`) in the voice of every other failure:
 * one line starting `insights-sync:`, whatever the argument it quotes holds. Subcommands inherit
 * this because it is set before they are registered.
 */
export function usageLine(text: string): string {
  // Commander puts its suggestion on a line of its own: it joins this one, so the line stays one.
  const joined = text
    .replace(/^error: /, '')
    .replace(/\n$/, '')
    .replace(/\n\(Did you mean ([^\n]*)\)$/, ' (did you mean $1)');
  return `insights-sync: ${oneLine(joined)}\n`;
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
