// Preloaded into a CLI process under test (NODE_OPTIONS=--import=<this file>): notes when the CLI
// starts its work (commander's parseAsync, once the modules of its commands are loaded through
// tsx, below) and,
// at exit, writes to EXIT_CLOCK_FILE how long that work took and how long the process lived.
// Test instrumentation only: the CLI itself knows nothing of it.
import { writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { Command } from 'commander';
import { register } from 'tsx/esm/api';

// Each command imports its modules when it runs (src/cli/main.ts). Load those of the commands
// under test (config, logger) now, so the clock below times the CLI's work and not their loading.
const unregister = register();
await import(new URL('../../src/cli/command-context.ts', import.meta.url).href);
await unregister();

const file = process.env.EXIT_CLOCK_FILE;
let startedWork;
const parseAsync = Command.prototype.parseAsync;
Command.prototype.parseAsync = function (...args) {
  startedWork ??= performance.now();
  return parseAsync.apply(this, args);
};
process.on('exit', () => {
  // A process that never started the CLI's work is the launcher that relayed it to a child with a
  // heap limit (bin/launch.js): the child, which exits first, wrote the figures.
  if (!file || startedWork === undefined) return;
  const now = performance.now();
  writeFileSync(
    file,
    JSON.stringify({ workMs: startedWork === undefined ? null : now - startedWork, processMs: now }),
  );
});
