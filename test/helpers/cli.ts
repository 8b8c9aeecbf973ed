import { type ChildProcess, spawn } from 'node:child_process';
import { inject } from 'vitest';
import { type ChildOutput, collectOutput } from '../../bench/child-process.js';

export { collectOutput };

export type CliResult = ChildOutput;

/** The environment of a CLI run: nothing from the developer's shell leaks in but PATH. */
export function cliEnv(extra: Record<string, string>): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/tmp',
    CI: 'true',
    LOG_LEVEL: 'warn',
    ...extra,
  };
}

/** `cwd`: where the CLI reads its .env (the test's own directory when unset). */
export function startCli(
  args: string[],
  env: Record<string, string>,
  cwd?: string,
): { child: ChildProcess; done: Promise<CliResult> } {
  // The current sources, transpiled once for the run (test-cli-build.ts), as bin/insights-sync-dev.js
  // would run them through tsx in each process.
  const child = spawn(process.execPath, [inject('testCliBin'), ...args], {
    env,
    cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const done = collectOutput(child);
  return { child, done };
}

export function runCli(args: string[], env: Record<string, string>, cwd?: string): Promise<CliResult> {
  return startCli(args, env, cwd).done;
}

/** The base URL `serve` prints once it listens; rejects if it exits first. */
export function listeningUrl(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /listening on (http:\/\/\S+)/.exec(out);
      if (match?.[1]) resolve(match[1]);
    });
    child.on('close', (code) => reject(new Error(`serve exited with ${code} before listening`)));
  });
}
