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
    // Child processes, not threads: pg pools, servers and process-level state stay per test file.
    pool: 'forks',
    fileParallelism: true,
    // Vitest's default is one file at a time on a 2-core machine (cores - 1), yet most files wait
    // on servers, child processes and timers far more than they compute: three at once keep both
    // cores busy.
    maxWorkers: 3,
    // A forgotten `.only` must not silently skip the rest of the suite in CI.
    allowOnly: !process.env.CI,
  },
});
