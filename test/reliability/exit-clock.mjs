// Preloaded into a CLI process under test (NODE_OPTIONS=--import=<this file>): notes when the CLI
// starts its work (commander's parseAsync, called once every module is loaded through tsx) and,
// at exit, writes to EXIT_CLOCK_FILE how long that work took and how long the process lived.
// Test instrumentation only: the CLI itself knows nothing of it.
import { writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { Command } from 'commander';

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
