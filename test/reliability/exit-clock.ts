import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type CliResult, cliEnv, runCli } from '../helpers/cli.js';

const PRELOAD = fileURLToPath(new URL('./exit-clock.mjs', import.meta.url));

export interface TimedCli extends CliResult {
  /** From the CLI starting its work (every module loaded) to the process's exit. */
  workMs: number;
  /** From the process's start to its exit: tsx's start-up (1-2 s here) included. */
  processMs: number;
}

/**
 * Runs the CLI as a process with exit-clock.mjs preloaded, and reads its figures: the time the
 * CLI's own work took, apart from the time tsx takes to load it.
 */
export async function runTimedCli(args: string[], env: Record<string, string>): Promise<TimedCli> {
  const dir = mkdtempSync(join(tmpdir(), 'insights-clock-'));
  const file = join(dir, 'clock.json');
  try {
    const result = await runCli(
      args,
      cliEnv({ ...env, EXIT_CLOCK_FILE: file, NODE_OPTIONS: `--import=${PRELOAD}` }),
    );
    if (!existsSync(file)) throw new Error(`the CLI never started its work: ${result.stderr}`);
    const clock = JSON.parse(readFileSync(file, 'utf8')) as { workMs: number; processMs: number };
    return { ...result, workMs: clock.workMs, processMs: clock.processMs };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
