import type { TestProject } from 'vitest/node';
import { withClient } from '../../scripts/dev-database/admin.js';
import { startDatabaseServer } from '../../scripts/dev-database/server.js';
import {
  dropClonesAndTemplate,
  dropLeftovers,
  migrateTemplate,
} from '../../scripts/dev-database/template.js';
import type { TestDatabaseContext } from './provided-context.js';
import { buildTestCli } from './test-cli-build.js';

/** The CLI's code for a database it cannot reach or start (README, "Exit codes"). */
const NO_DATABASE_EXIT_CODE = 5;

const SCHEMA = 'insights';
/** Test runs never last this long: older leftovers are from runs killed before their teardown. */
const LEFTOVER_AGE_MS = 60 * 60 * 1000;

/**
 * Runs once per `vitest run`, in the main process: finds a PostgreSQL server, migrates a template
 * database once, and hands its name to the test files, which clone it (createTestDatabase()):
 * a clone takes milliseconds, migrating each test database would take seconds. It also
 * transpiles the CLI once for the processes the tests start (test-cli-build.ts).
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const started = Date.now();
  const server = await startDatabaseServer().catch(exitWithOneLine);
  // pid and start time make names unique per run, and let a later run recognise stale ones.
  const runTag = `${process.pid}_${started.toString(36)}`;
  const template = `insights_tpl_${runTag}`;
  const databasePrefix = `insights_test_${runTag}_`;

  try {
    // Databases of earlier runs on a shared server that were killed before their teardown ran.
    await withClient(server.adminUrl, (admin) =>
      dropLeftovers(admin, 'insights_t', /^insights_(?:tpl|test)_\d+_([0-9a-z]+)/, LEFTOVER_AGE_MS),
    );
    await migrateTemplate(server.adminUrl, template, SCHEMA);
  } catch (error) {
    await server.stop();
    throw error;
  }

  const cli = await buildTestCli(runTag).catch(async (error: unknown) => {
    await dropClonesAndTemplate(server.adminUrl, databasePrefix, template).catch(() => {});
    await server.stop();
    throw error;
  });
  project.provide('testCliBin', cli.bin);

  const context: TestDatabaseContext = {
    adminUrl: server.adminUrl,
    template,
    schema: SCHEMA,
    databasePrefix,
  };
  project.provide('testDatabase', context);
  console.info(
    `test database server: ${server.kind}, template ${template} ready in ${Date.now() - started} ms`,
  );

  return async () => {
    try {
      await dropClonesAndTemplate(server.adminUrl, databasePrefix, template);
    } finally {
      await Promise.all([server.stop(), cli.remove()]);
    }
  };
}

/**
 * No server to test against (the embedded one cannot start: a program it cannot run, a package
 * not installed): what to do, in one line, instead of vitest's stack trace of this setup file.
 */
function exitWithOneLine(error: unknown): never {
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(
    `no PostgreSQL server for the tests: ${message}; set TEST_DATABASE_URL to a PostgreSQL server instead\n`,
  );
  process.exit(NO_DATABASE_EXIT_CODE);
}
