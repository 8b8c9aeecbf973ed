// Types of bin/launch.js (plain JavaScript: it runs before any build), for the tests that hold it
// to the CLI.
export const MIN_NODE: readonly [number, number];
export function nodeVersionProblem(version: string): string | undefined;
export const LONG_RUNS: Set<string>;
export const DEFAULT_HEAP_MB: number;
export const SEMI_SPACE_MB: number;
export const SERVE_SEMI_SPACE_MB: number;
export const MALLOC_ARENAS: string;
export const MALLOC_MMAP_THRESHOLD: string;
export const MIN_HEAP_MB: number;
export const MAX_HEAP_MB: number;
export function parseHeapSetting(value: string | undefined): number | undefined;
export function semiSpaceFor(argv: string[]): number;
export function heapLimitFor(
  argv: string[],
  env: Record<string, string | undefined>,
  execArgv: string[],
): number | undefined;
export function relaunchFlags(
  argv: string[],
  env: Record<string, string | undefined>,
  execArgv: string[],
): string[] | undefined;
export function launch(
  loadCli: () => Promise<{ runCli: (argv: string[]) => Promise<number> }>,
): Promise<void>;
