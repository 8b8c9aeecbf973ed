/**
 * What the global setup hands to every test file (vitest `provide` / `inject`): values only, since
 * they cross from the main process to the forked workers.
 */
export interface TestDatabaseContext {
  /** A database on the test server that tests may connect to in order to create or drop others. */
  adminUrl: string;
  /** Migrated template database, closed to connections, that createTestDatabase() clones. */
  template: string;
  /** Schema the template was migrated into. */
  schema: string;
  /** Every test database of this run starts with it, so teardown can drop leftovers. */
  databasePrefix: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    testDatabase: TestDatabaseContext;
    /** The CLI entry test processes start: the current sources, transpiled once (test-cli-build.ts). */
    testCliBin: string;
  }
}
