import { spawn } from 'node:child_process';
import { findExecutable } from '../../scripts/find-executable.js';
import { type RequiredTool, requireTool } from '../helpers/required-tool.js';
import { lintExposition } from './exposition-lint.js';

export const PROMTOOL: RequiredTool = {
  name: 'promtool',
  check: 'promtool check metrics',
  instead: 'exposition-lint.ts checked the text',
  install: 'apt-get install -y prometheus (it carries promtool), or set PROMTOOL_PATH',
};

/** PROMTOOL_PATH when set, else `promtool` on PATH (Debian's package puts it in /usr/bin). */
export function findPromtool(env: NodeJS.ProcessEnv = process.env): string | undefined {
  return findExecutable('promtool', env.PROMTOOL_PATH, env.PATH);
}

/**
 * An exposition text checked twice: by our strict checker (always), and by `promtool check
 * metrics` where promtool is installed (in CI it must be: required-tool.ts). Code 0 and no
 * output when both accept it; otherwise what each said.
 */
export async function checkExposition(
  text: string,
  env: NodeJS.ProcessEnv = process.env,
  print?: (line: string) => void,
): Promise<{ code: number | null; output: string }> {
  const problems = lintExposition(text);
  const promtool = findPromtool(env);
  const real =
    requireTool(PROMTOOL, promtool !== undefined, env, print) && promtool !== undefined
      ? await promtoolCheck(promtool, text)
      : { code: 0, output: '' };
  const output = [...problems.map((p) => `exposition-lint: ${p}\n`), real.output].join('');
  return { code: problems.length > 0 ? 1 : real.code, output };
}

/** `promtool check metrics` on the text (stdin): its exit code and what it said (lint problems). */
export function promtoolCheck(
  promtool: string,
  text: string,
): Promise<{ code: number | null; output: string }> {
  const child = spawn(promtool, ['check', 'metrics'], { stdio: ['pipe', 'pipe', 'pipe'] });
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
