import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/** `npm run bench -- ...`: help and a mistyped argument answer in words, never a stack trace. */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function bench(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', join(ROOT, 'bench', 'run.ts'), ...args],
      { cwd: ROOT, env: { ...process.env, NO_COLOR: '1' } },
      (error, stdout, stderr) => resolve({ code: error === null ? 0 : Number(error.code), stdout, stderr }),
    );
  });
}

describe('the benchmark command line', () => {
  it('--help prints the usage and what each option does, exit 0, measuring nothing', async () => {
    const { code, stdout, stderr } = await bench('--help');
    expect(code).toBe(0);
    expect(stdout).toMatch(/^usage: npm run bench -- /);
    expect(stdout).toContain('--only');
    expect(stdout).toContain('--no-write');
    expect(stderr).not.toContain('load average');
  }, 30_000);

  it('an unknown option is named, the usage follows, exit 2, no stack trace', async () => {
    const { code, stderr } = await bench('--onyl', 'queue');
    expect(code).toBe(2);
    expect(stderr).toMatch(/^bench: .*'--onyl'/);
    expect(stderr).toContain('usage: npm run bench');
    expect(stderr).not.toMatch(/\n\s+at /);
  }, 30_000);

  it('an unknown benchmark is named, exit 2', async () => {
    const { code, stderr } = await bench('--only', 'queue,lodaer');
    expect(code).toBe(2);
    expect(stderr).toMatch(/^bench: no benchmark named lodaer\n/);
  }, 30_000);
});
