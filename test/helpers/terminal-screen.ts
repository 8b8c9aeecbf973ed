import { spawn } from 'node:child_process';
import xterm from '@xterm/headless';
import { inject } from 'vitest';

export interface ScreenRun {
  /** The terminal's lines as a person sees them once the command has exited, scrollback included. */
  screen: string[];
  code: number | null;
}

/**
 * Runs the CLI on a pseudo-terminal of `cols` x `rows` (util-linux `script`), so that it sees a
 * terminal on stdout and stderr as a user's shell gives it, and replays every byte it wrote into
 * a terminal emulator (xterm.js, headless): what is compared is the final screen, cursor moves
 * and line clears applied, not the byte stream. `interruptWhen`: typed Ctrl+C (the terminal sends
 * SIGINT to the command) once the output so far satisfies it.
 */
export async function runOnTerminal(
  args: string[],
  env: Record<string, string>,
  options: { cols?: number; rows?: number; interruptWhen?: (output: string) => boolean } = {},
): Promise<ScreenRun> {
  const cols = options.cols ?? 140;
  const rows = options.rows ?? 45;
  const command = [process.execPath, inject('testCliBin'), ...args].map(shellQuote).join(' ');
  const child = spawn('script', ['-qfec', `stty cols ${cols} rows ${rows}; exec ${command}`, '/dev/null'], {
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const chunks: Buffer[] = [];
  let interrupted = false;
  const take = (chunk: Buffer) => {
    chunks.push(chunk);
    if (interrupted || options.interruptWhen === undefined) return;
    if (!options.interruptWhen(Buffer.concat(chunks).toString('utf8'))) return;
    interrupted = true;
    child.stdin.write('\u0003');
  };
  child.stdout.on('data', take);
  child.stderr.on('data', take);
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  child.stdin.destroy();
  const terminal = new xterm.Terminal({ cols, rows, scrollback: 10_000, allowProposedApi: true });
  await new Promise<void>((resolve) => terminal.write(Buffer.concat(chunks), resolve));
  const buffer = terminal.buffer.active;
  const screen: string[] = [];
  for (let i = 0; i < buffer.length; i++) screen.push(buffer.getLine(i)?.translateToString(true) ?? '');
  while (screen.length > 0 && screen.at(-1) === '') screen.pop();
  terminal.dispose();
  return { screen, code };
}

function shellQuote(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`;
}
