import { describe, expect, it } from 'vitest';
import { decideTool, isCi, MissingToolError, type RequiredTool, requireTool } from './required-tool.js';

const TOOL: RequiredTool = {
  name: 'promtool',
  check: 'the real check',
  install: 'apt-get install -y prometheus',
};

describe('a check that needs a program npm does not install', () => {
  it('runs when the program is there, in CI or not', () => {
    expect(decideTool(TOOL, true, {})).toEqual({ kind: 'run' });
    expect(decideTool(TOOL, true, { CI: 'true' })).toEqual({ kind: 'run' });
  });

  it('without CI, is skipped with one line naming the program and its install command', () => {
    const decision = decideTool(TOOL, false, {});
    expect(decision).toEqual({
      kind: 'skip',
      line: 'skipped the real check: promtool is missing; install it: apt-get install -y prometheus',
    });
    if (decision.kind === 'skip') expect(decision.line).not.toContain('\n');
    expect(decideTool({ ...TOOL, instead: 'our lint checked it' }, false, { CI: '' })).toEqual({
      kind: 'skip',
      line: 'skipped the real check (our lint checked it): promtool is missing; install it: apt-get install -y prometheus',
    });
  });

  it('in CI, fails: CI never loses the real check', () => {
    expect(decideTool(TOOL, false, { CI: 'true' })).toEqual({
      kind: 'fail',
      message:
        'promtool is missing and CI is set: the real check must run in CI; install it: apt-get install -y prometheus',
    });
  });

  it('takes CI as set for any value but empty, 0 and false', () => {
    for (const value of ['true', '1', 'yes', 'TRUE', 'woodpecker'])
      expect(isCi({ CI: value }), value).toBe(true);
    for (const value of [undefined, '', '0', 'false', 'False', ' '])
      expect(isCi({ CI: value }), value).toBe(false);
  });

  it('requireTool prints the skip line once per test file, and throws a typed error in CI', () => {
    const printed: string[] = [];
    const tool = { ...TOOL, check: 'a check made twice' };
    expect(requireTool(tool, false, {}, (line) => printed.push(line))).toBe(false);
    expect(requireTool(tool, false, {}, (line) => printed.push(line))).toBe(false);
    expect(printed).toEqual([
      'skipped a check made twice: promtool is missing; install it: apt-get install -y prometheus',
    ]);
    expect(requireTool(tool, true, { CI: 'true' }, (line) => printed.push(line))).toBe(true);
    expect(() => requireTool(tool, false, { CI: 'true' })).toThrow(MissingToolError);
    expect(() => requireTool(tool, false, { CI: 'true' })).toThrow(/^promtool is missing and CI is set/);
    expect(printed).toHaveLength(1);
  });
});
