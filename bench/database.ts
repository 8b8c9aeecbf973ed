import type { Kysely } from 'kysely';
import type pg from 'pg';
import { createDb, createPool } from '../src/db/connection.js';
import type { Database } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrator.js';
import {
  createDatabase,
  databasesStartingWith,
  databaseUrl,
  dropDatabase,
  withClient,
} from '../test/helpers/database-admin.js';
import { type DatabaseServer, startDatabaseServer } from '../test/helpers/database-server.js';

export const BENCH_SCHEMA = 'insights';
const PREFIX = 'insights_bench_';
/** A benchmark run never lasts this long: older bench databases are leftovers of a killed run. */
const LEFTOVER_AGE_MS = 3 * 60 * 60 * 1000;

/** A fresh, migrated warehouse of its own for one measurement. */
export interface BenchDatabase {
  name: string;
  url: string;
  pool: pg.Pool;
  db: Kysely<Database>;
  /** Closes the pool (if still open) and drops the database. */
  drop(): Promise<void>;
}

/**
 * The PostgreSQL server the benchmarks use: found exactly as the tests find theirs
 * (TEST_DATABASE_URL, else a Docker container, else an embedded server; test/helpers), and a
 * migrated template that each measurement clones in a few hundred milliseconds.
 */
export interface BenchServer {
  kind: DatabaseServer['kind'] | 'given';
  adminUrl: string;
  /** `select version()`. */
  version: string;
  /** A clone of the migrated template. `max`: the pool size (the CLI's default is 10). */
  createDatabase(options?: { max?: number }): Promise<BenchDatabase>;
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
      await dropLeftovers(admin);
      await createDatabase(admin, template);
      return (await admin.query<{ version: string }>('select version()')).rows[0]?.version ?? '?';
    });
    const pool = createPool({ url: databaseUrl(server.adminUrl, template), schema: BENCH_SCHEMA, max: 1 });
    const db = createDb(pool);
    try {
      const outcome = await migrateToLatest(db, BENCH_SCHEMA);
      if (outcome.error !== undefined)
        throw new Error('migrating the bench template failed', { cause: outcome.error });
    } finally {
      await db.destroy();
    }
    return {
      kind: server.kind,
      adminUrl: server.adminUrl,
      version,
      async createDatabase({ max } = {}) {
        created += 1;
        const name = `${PREFIX}${tag}_${created}`;
        await withClient(server.adminUrl, (admin) => createDatabase(admin, name, template));
        const url = databaseUrl(server.adminUrl, name);
        const pool = createPool({ url, schema: BENCH_SCHEMA, applicationName: 'insights-sync-bench', max });
        const db = createDb(pool);
        let dropped: Promise<void> | undefined;
        const drop = () => {
          dropped ??= (async () => {
            if (!pool.ending) await db.destroy();
            await withClient(server.adminUrl, (admin) => dropDatabase(admin, name));
          })();
          return dropped;
        };
        return { name, url, pool, db, drop };
      },
      async stop() {
        try {
          await withClient(server.adminUrl, async (admin) => {
            for (const name of await databasesStartingWith(admin, `${PREFIX}${tag}`))
              await dropDatabase(admin, name);
            await dropDatabase(admin, template);
          });
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

async function dropLeftovers(admin: pg.Client): Promise<void> {
  for (const name of await databasesStartingWith(admin, PREFIX)) {
    const match = /^insights_bench_(?:tpl_)?\d+_([0-9a-z]+)/.exec(name);
    const startedAt = match?.[1] === undefined ? Number.NaN : Number.parseInt(match[1], 36);
    if (Date.now() - startedAt > LEFTOVER_AGE_MS) await dropDatabase(admin, name).catch(() => {});
  }
}
