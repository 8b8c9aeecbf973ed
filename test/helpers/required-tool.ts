import { expect } from 'vitest';

/**
 * The one rule for a check that needs a program npm does not install (Chromium, promtool).
 * On a developer's machine without it the check is skipped, and says so in one line with the
 * install command; in CI (`CI` set) a missing program fails the test instead: CI must never lose
 * the real check because an install step went missing.
 */

/** A program a check runs, and how a user gets it. */
export interface RequiredTool {
  /** What the user would look for: `promtool`, `chromium`. */
  name: string;
  /** What the skipped check would have done. */
  check: string;
  /** The command (or setting) that makes the program available. */
  install: string;
  /** What checks the same property meanwhile, when something does. */
  instead?: string;
}

export type ToolDecision =
  | { kind: 'run' }
  | { kind: 'skip'; line: string }
  | { kind: 'fail'; message: string };

/** A missing program in a CI run: the check it needs fails rather than skips. */
export class MissingToolError extends Error {
  constructor(
    readonly tool: string,
    message: string,
  ) {
    super(message);
    this.name = 'MissingToolError';
  }
}

/**
 * Whether this is a CI run: `CI` set to anything but empty, `0` or `false`, as CI services
 * (and vitest itself) read it.
 */
export function isCi(env: Readonly<Record<string, string | undefined>>): boolean {
  const value = env.CI?.trim().toLowerCase();
  return value !== undefined && value !== '' && value !== '0' && value !== 'false';
}

/** Run when the program is there; otherwise skip with one line, or fail in CI. Pure. */
export function decideTool(
  tool: RequiredTool,
  present: boolean,
  env: Readonly<Record<string, string | undefined>>,
): ToolDecision {
  if (present) return { kind: 'run' };
  if (isCi(env))
    return {
      kind: 'fail',
      message: `${tool.name} is missing and CI is set: ${tool.check} must run in CI; install it: ${tool.install}`,
    };
  const instead = tool.instead === undefined ? '' : ` (${tool.instead})`;
  return {
    kind: 'skip',
    line: `skipped ${tool.check}${instead}: ${tool.name} is missing; install it: ${tool.install}`,
  };
}

/**
 * The skip lines already printed, by test file: a check made several times in a file prints its
 * line once, and every file that skipped it says so (worker processes run file after file).
 */
const announced = new Set<string>();

/**
 * Applies decideTool: true to run the check, false when it is skipped (its line printed once per
 * test file), and throws MissingToolError in CI.
 */
export function requireTool(
  tool: RequiredTool,
  present: boolean,
  env: Readonly<Record<string, string | undefined>> = process.env,
  print: (line: string) => void = (line) => console.warn(line),
): boolean {
  const decision = decideTool(tool, present, env);
  if (decision.kind === 'fail') throw new MissingToolError(tool.name, decision.message);
  if (decision.kind === 'skip') {
    const key = `${expect.getState().testPath ?? ''}\n${decision.line}`;
    if (!announced.has(key)) print(decision.line);
    announced.add(key);
  }
  return decision.kind === 'run';
}
