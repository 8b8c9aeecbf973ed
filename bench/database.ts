import { withClient } from '../scripts/dev-database/admin.js';
import { type DatabaseServer, startDatabaseServer } from '../scripts/dev-database/server.js';
import {
  type ClonedDatabase,
  cloneTemplate,
  dropClonesAndTemplate,
  dropLeftovers,
  migrateTemplate,
} from '../scripts/dev-database/template.js';

export const BENCH_SCHEMA = 'insights';
const PREFIX = 'insights_bench_';
/** A benchmark run never lasts this long: older bench databases are leftovers of a killed run. */
const LEFTOVER_AGE_MS = 3 * 60 * 60 * 1000;

/** A fresh, migrated warehouse of its own for one measurement. */
export type BenchDatabase = ClonedDatabase;

/**
 * The PostgreSQL server the benchmarks use: found exactly as the tests find theirs
 * (TEST_DATABASE_URL, else a Docker container, else an embedded server; scripts/dev-database), and a
 * migrated template that each measurement clones in a few hundred milliseconds.
 */
export interface BenchServer {
  kind: DatabaseServer['kind'] | 'given';
  adminUrl: string;
  /** `select version()`. */
  version: string;
  /**
   * A clone of the migrated template, or of `from`: a bench database whose set-up several
   * measurements share, once nobody is connected to it any more (its pool closed, its processes
   * gone). `max`: the pool size (the CLI's default is 10).
   */
  createDatabase(options?: { max?: number; from?: BenchDatabase }): Promise<BenchDatabase>;
  stop(): Promise<void>;
}

/** `adminUrl` given (the CI smoke test passes the tests' server): no server is started. */
export async function openBenchServer(options: { adminUrl?: string } = {}): Promise<BenchServer> {
  const server: Pick<DatabaseServer, 'adminUrl' | 'stop'> & { kind: BenchServer['kind'] } =
    options.adminUrl === undefined
      ? await startDatabaseServer()
      : { kind: 'given', adminUrl: options.adminUrl, stop: async () => {} };
  const started = Date.now();
  // pid and start time: unique per run, and a later run can tell a stale one by its age.
  const tag = `${process.pid}_${started.toString(36)}`;
  const template = `${PREFIX}tpl_${tag}`;
  let created = 0;
  try {
    const version = await withClient(server.adminUrl, async (admin) => {
      await dropLeftovers(admin, PREFIX, /^insights_bench_(?:tpl_)?\d+_([0-9a-z]+)/, LEFTOVER_AGE_MS);
      return (await admin.query<{ version: string }>('select version()')).rows[0]?.version ?? '?';
    });
    await migrateTemplate(server.adminUrl, template, BENCH_SCHEMA);
    return {
      kind: server.kind,
      adminUrl: server.adminUrl,
      version,
      async createDatabase({ max, from } = {}) {
        created += 1;
        return cloneTemplate(server.adminUrl, from?.name ?? template, `${PREFIX}${tag}_${created}`, {
          schema: BENCH_SCHEMA,
          applicationName: 'insights-sync-bench',
          max,
        });
      },
      async stop() {
        try {
          await dropClonesAndTemplate(server.adminUrl, `${PREFIX}${tag}`, template);
        } finally {
          await server.stop();
        }
      },
    };
  } catch (error) {
    await server.stop();
    throw error;
  }
}
