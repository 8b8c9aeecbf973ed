import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * .ci/steps.sh, which .ci/run sources: each step's duration in a table at the end, also when a
 * step fails, and the check that two `npm test` runs passed the same tests, all of them. Run on
 * dummy scripts; bash's SECONDS is set by hand, so each duration is known to the second.
 */

const STEPS = path.resolve(import.meta.dirname, '../../.ci/steps.sh');
const dir = mkdtempSync(path.join(tmpdir(), 'ci-steps-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function run(body: string, trap = 'trap ci_step_report EXIT') {
  const script = ['set -euo pipefail', `source '${STEPS}'`, trap, body].join('\n');
  const result = spawnSync('bash', ['-c', script], { encoding: 'utf8' });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** The rows of the table printed at the end, cells split on runs of spaces. */
function table(stdout: string): string[][] {
  const [, after = ''] = stdout.split('=== step durations\n');
  return after
    .trim()
    .split('\n')
    .map((line) => line.trim().split(/ {2,}/));
}

/**
 * The table with each number checked against `expected`: bash's SECONDS counts whole seconds of
 * the wall clock since it was set, so a second boundary between setting it and the report adds one.
 */
function expectTable(stdout: string, expected: (string | number)[][]): void {
  const rows = table(stdout);
  expect(rows.map((row) => row.map((cell) => (/^\d+$/.test(cell) ? 'N' : cell)))).toEqual(
    expected.map((row) => row.map((cell) => (typeof cell === 'number' ? 'N' : cell))),
  );
  for (const [i, row] of rows.entries())
    for (const [j, cell] of row.entries()) {
      const want = expected[i]?.[j];
      if (typeof want === 'number') expect(Number(cell) - want, `${row[0]}: ${cell}`).toBeOneOf([0, 1]);
    }
}

function log(name: string, text: string): string {
  const file = path.join(dir, name);
  writeFileSync(file, text);
  return file;
}

describe('the step durations of .ci/run', () => {
  it('prints every step with its seconds and the total when the run ends well', () => {
    const result = run('SECONDS=0; step "first"; SECONDS=3; step "second"; SECONDS=10');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('\n=== first\n');
    expectTable(result.stdout, [
      ['step', 'seconds'],
      ['first', 3],
      ['second', 7],
      ['total', 10],
    ]);
  });

  it('still prints them when a step fails, marks that step, keeps its exit code and runs ci_cleanup', () => {
    const marker = path.join(dir, 'cleaned');
    const result = run(
      `ci_cleanup() { touch '${marker}'; }\nSECONDS=0; step "npm ci"; SECONDS=4; step "test (Node 22)"; SECONDS=9; exit 7\nstep "never"`,
    );
    expect(result.code).toBe(7);
    expectTable(result.stdout, [
      ['step', 'seconds'],
      ['npm ci', 4],
      ['test (Node 22)', 5, 'FAILED'],
      ['total', 9],
    ]);
    expect(spawnSync('test', ['-e', marker]).status).toBe(0);
  });

  it('a command failing under set -e fails the run the same way', () => {
    const result = run('step "lint"; false; step "never"');
    expect(result.code).toBe(1);
    expect(table(result.stdout).map((row) => row[0])).toEqual(['step', 'lint', 'total']);
    expect(table(result.stdout)[1]?.[2]).toBe('FAILED');
  });
});

describe('vitest_summary: what two npm test runs must agree on', () => {
  const summary = (text: string) => run(`vitest_summary '${log('npm-test.log', text)}'`, '');

  it('is the files and tests line of an all-green run, colours removed', () => {
    const result = summary(
      'test database server: embedded\n\x1b[2m Test Files \x1b[22m \x1b[1m\x1b[32m212 passed\x1b[39m\x1b[22m\x1b[90m (212)\x1b[39m\n\x1b[2m      Tests \x1b[22m \x1b[1m\x1b[32m1840 passed\x1b[39m\x1b[22m\x1b[90m (1840)\x1b[39m\n   Duration  301.2s\n',
    );
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('Test Files 212 passed (212) | Tests 1840 passed (1840)\n');
  });

  it('differs when another number of tests passed', () => {
    const a = summary(' Test Files  2 passed (2)\n      Tests  10 passed (10)\n').stdout;
    const b = summary(' Test Files  2 passed (2)\n      Tests  9 passed (9)\n').stdout;
    expect(a).not.toBe(b);
  });

  it.each([
    ['a failed test', ' Test Files  1 failed | 1 passed (2)\n      Tests  1 failed | 9 passed (10)\n'],
    ['a skipped test', ' Test Files  2 passed (2)\n      Tests  9 passed | 1 skipped (10)\n'],
    ['a skipped file', ' Test Files  1 passed | 1 skipped (2)\n      Tests  9 passed (9)\n'],
    ['a todo', ' Test Files  2 passed (2)\n      Tests  9 passed | 1 todo (10)\n'],
    ['no summary (the run crashed)', 'Error: spawn initdb EACCES\n'],
  ])('fails on %s', (_, text) => {
    const result = summary(text);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).not.toBe('');
  });
});
