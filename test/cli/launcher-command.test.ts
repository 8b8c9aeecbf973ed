/**
 * bin/launch.js chooses a long run's heap limit from process.argv before the CLI loads, with no
 * commander: it takes the first argument that is not an option as the command. These
 * specifications hold that reading to the real command tree.
 */
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_HEAP_MB,
  heapLimitFor,
  LONG_RUNS,
  relaunchFlags,
  SEMI_SPACE_MB,
  SERVE_SEMI_SPACE_MB,
  semiSpaceFor,
} from '../../bin/launch.js';
import { buildProgram } from '../../src/cli/main.js';

const argv = (...args: string[]): string[] => ['node', 'insights-sync', ...args];

describe('the launcher reads the command as commander does', () => {
  const program = buildProgram();

  it('the program has no option of its own that takes a value, so no value can stand before the command', () => {
    const taking = program.options.filter((option) => option.required || option.optional);
    expect(taking.map((option) => option.flags)).toEqual([]);
    expect(program.options.map((option) => option.long).sort()).toEqual(['--version']);
  });

  it('every long run it bounds is a command of the CLI', () => {
    const names = program.commands.map((command) => command.name());
    for (const name of LONG_RUNS) expect(names).toContain(name);
  });

  it('an option value that names another command does not change which command runs', () => {
    expect(heapLimitFor(argv('status', '--source', 'sync'), {}, [])).toBeUndefined();
    expect(heapLimitFor(argv('sync', '--source', 'status'), {}, [])).toBe(DEFAULT_HEAP_MB);
    expect(heapLimitFor(argv('--version'), {}, [])).toBeUndefined();
  });

  it('each long run gets the default limit, and its --help none (it starts one process only)', () => {
    for (const name of LONG_RUNS) {
      expect(heapLimitFor(argv(name), {}, [])).toBe(DEFAULT_HEAP_MB);
      expect(heapLimitFor(argv(name, '--help'), {}, [])).toBeUndefined();
      expect(heapLimitFor(argv(name, '-h'), {}, [])).toBeUndefined();
    }
  });

  it('serve gets larger semi-spaces than the other long runs (a young generation for its requests)', () => {
    expect(semiSpaceFor(argv('serve'))).toBe(SERVE_SEMI_SPACE_MB);
    expect(SERVE_SEMI_SPACE_MB).toBeGreaterThan(SEMI_SPACE_MB);
    for (const name of LONG_RUNS)
      if (name !== 'serve') expect(semiSpaceFor(argv(name, '--source', 'serve'))).toBe(SEMI_SPACE_MB);
  });

  it('a long run starts again with the heap limit and small semi-spaces; other commands run as they are', () => {
    expect(relaunchFlags(argv('backfill'), {}, [])).toEqual([
      `--max-old-space-size=${DEFAULT_HEAP_MB}`,
      `--max-semi-space-size=${SEMI_SPACE_MB}`,
    ]);
    expect(relaunchFlags(argv('status'), {}, [])).toBeUndefined();
    expect(relaunchFlags(argv('backfill', '--help'), {}, [])).toBeUndefined();
    // No limit asked for: V8's own sizing, in this process.
    expect(relaunchFlags(argv('backfill'), { INSIGHTS_MAX_HEAP_MB: '0' }, [])).toBeUndefined();
  });

  it('a heap limit the user gave node stands, and only the semi-spaces are bounded beside it, unless they sized those too', () => {
    const semi = [`--max-semi-space-size=${SEMI_SPACE_MB}`];
    expect(relaunchFlags(argv('backfill'), { NODE_OPTIONS: '--max-old-space-size=128' }, [])).toEqual(semi);
    expect(relaunchFlags(argv('sync'), {}, ['--max_old_space_size=512'])).toEqual(semi);
    expect(relaunchFlags(argv('serve'), { NODE_OPTIONS: '--max-old-space-size=128' }, [])).toEqual([
      `--max-semi-space-size=${SERVE_SEMI_SPACE_MB}`,
    ]);
    const both = { NODE_OPTIONS: '--max-old-space-size=128 --max-semi-space-size=32' };
    expect(relaunchFlags(argv('backfill'), both, [])).toBeUndefined();
  });
});
