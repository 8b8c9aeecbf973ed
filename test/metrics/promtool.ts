import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';

/** Debian's package `prometheus` installs it here; a test fails (never skips) without it. */
export const PROMTOOL = '/usr/bin/promtool';

/** `promtool check metrics` on the text (stdin): its exit code and what it said (lint problems). */
export function promtoolCheck(text: string): Promise<{ code: number | null; output: string }> {
  if (!existsSync(PROMTOOL))
    throw new Error(`${PROMTOOL} is missing: apt-get install prometheus (it carries promtool)`);
  const child = spawn(PROMTOOL, ['check', 'metrics'], { stdio: ['pipe', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stdin.end(text);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}

/** The samples of an exposition text: name, labels and value, comments skipped. */
export function samples(text: string): { name: string; labels: Record<string, string>; value: number }[] {
  const found: { name: string; labels: Record<string, string>; value: number }[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g))
      labels[pair[1] ?? ''] = pair[2] ?? '';
    found.push({ name: match[1] ?? '', labels, value: Number(match[3]) });
  }
  return found;
}
