import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // One PostgreSQL server and one migrated template per run; each test file clones the template.
    globalSetup: ['test/helpers/global-setup.ts'],
    // Integration tests talk to a real database and HTTP servers; hooks may start them.
    testTimeout: 30_000,
    hookTimeout: 60_000,
    teardownTimeout: 60_000,
    // Child processes, not threads: process.env, signal handlers and exits behave as in the CLI.
    pool: 'forks',
    // A worker process runs file after file with one module cache: importing the sources anew for
    // every file cost about 1.3 s a file, a third of the suite's time on 2 cores. Files share the
    // process, so state a file leaves behind (an environment variable, a process-wide metric) must
    // not be what another file asserts on.
    isolate: false,
    fileParallelism: true,
    // Vitest's default is one file at a time on a 2-core machine (cores - 1), yet most files wait
    // on servers, child processes and timers far more than they compute: three at once keep both
    // cores busy.
    maxWorkers: 3,
    // A forgotten `.only` must not silently skip the rest of the suite in CI.
    allowOnly: !process.env.CI,
  },
});
