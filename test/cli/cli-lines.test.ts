import { describe, expect, it } from 'vitest';
import { usageLine } from '../../src/cli/main.js';
import { describeMigrate } from '../../src/cli/migrate.js';
import { cliEnv, runCli } from '../helpers/cli.js';

describe('migrate says what it did in one line', () => {
  it('nothing pending', () => {
    expect(describeMigrate('insights', [])).toBe('schema insights is up to date: nothing to apply');
  });

  it('one migration, by name', () => {
    expect(describeMigrate('insights', ['0029-late-arrivals'])).toBe(
      'schema insights upgraded: applied 0029-late-arrivals',
    );
  });

  it('a new warehouse: how many, from which to which, not the whole list', () => {
    const applied = Array.from({ length: 29 }, (_, i) => `${String(i + 1).padStart(4, '0')}-m`);
    expect(describeMigrate('insights', applied)).toBe(
      'schema insights upgraded: applied 29 migrations, 0001-m to 0029-m',
    );
  });
});

describe("commander's usage errors", () => {
  it('start with insights-sync: like every other failure', () => {
    expect(usageLine("error: unknown option '--colour'\n")).toBe(
      "insights-sync: unknown option '--colour'\n",
    );
  });

  it("join commander's suggestion to the line, not as an escaped line break", () => {
    expect(usageLine("error: unknown command 'sycn'\n(Did you mean sync?)\n")).toBe(
      "insights-sync: unknown command 'sycn' (did you mean sync?)\n",
    );
  });

  it('cannot forge a line with what the user typed', () => {
    expect(usageLine("error: unknown command 'a\nb\u001b[2J'\n")).toBe(
      "insights-sync: unknown command 'a\\u000ab\\u001b[2J'\n",
    );
  });
});

describe('a mistyped command, run', () => {
  it('gets one line with the suggestion, exit 2', async () => {
    const result = await runCli(['sycn'], cliEnv({}));
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("insights-sync: unknown command 'sycn' (did you mean sync?)\n");
    expect(result.stderr).not.toContain('\\u000a');
  });
});
