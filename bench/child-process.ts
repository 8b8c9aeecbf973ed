import type { ChildProcess } from 'node:child_process';

/** What a child process wrote, and how it ended. */
export interface ChildOutput {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Everything a child writes, once it has exited and its pipes are closed. Shared by the
 * benchmarks and the tests' CLI helper (test/helpers/cli.ts): the product never needs it.
 */
export function collectOutput(child: ChildProcess): Promise<ChildOutput> {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise<ChildOutput>((resolve) => {
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

/**
 * The URL a server child prints once it listens (`pattern` captures it); rejects with the end of
 * its stderr if it exits first.
 */
export function listeningUrl(child: ChildProcess, pattern: RegExp, name: string): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    let out = '';
    let err = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = pattern.exec(out);
      if (match?.[1]) resolve(match[1]);
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      err += chunk.toString();
    });
    child.on('exit', (code) => reject(new Error(`${name} exited with ${code}: ${err.slice(-2000)}`)));
  });
}
