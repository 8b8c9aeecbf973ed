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
    // A forgotten `.only` must not silently skip the rest of the suite in CI.
    allowOnly: !process.env.CI,
  },
});
