import path from 'node:path';
import { defineConfig } from 'vitest/config';
import base from '../../vitest.config.js';

/**
 * `npm run test:reliability`: the long trials (every `*.trials.ts`, filed beside the tests of what
 * they try: docs/reliability.md's SIGKILL mid-backfill, 10,000 fuzzed webhook bodies, every setting
 * as a process, canary secrets through every command; the queue's worker processes), apart from
 * `npm test` to keep that one quick. One file at a time: the trials time processes, and each
 * other's load would blur the figures.
 */
export default defineConfig({
  ...base,
  root: path.resolve(import.meta.dirname, '../..'),
  test: {
    ...base.test,
    include: ['test/**/*.trials.ts'],
    fileParallelism: false,
    // A fresh process per trial file: they are few and long, and they change process-wide state
    // (environment, signal handlers) more freely than the quick tests do.
    isolate: true,
    testTimeout: 120_000,
  },
});
