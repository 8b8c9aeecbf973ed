import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bookkeepingSchema, searchPath } from '../../src/db/bookkeeping.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { addDays, todayUtc } from '../../src/time/days.js';
import { cliEnv, startCli } from '../helpers/cli.js';
import {
  createRolesDatabase,
  migrateAsOwner,
  type RoleName,
  type RolesDatabase,
  SCHEMA,
} from './warehouse-roles.js';

/**
 * No reader can hold a sync window up: whatever a window carrying fields the spec does not
 * describe waits on (its turn at the inventory of unknown fields), an analyst's or a monitor's
 * login tries to hold it for the whole run, and the backfill, as the sync role, still ends at once.
 */

const BOOKKEEPING = bookkeepingSchema(SCHEMA);
/** Longer than any 2-day backfill takes here (seconds); a window held up waits for ever. */
const DEADLINE_MS = 60_000;

/**
 * What a reader could try to hold, statement by statement: the key the turn used to be (an
 * advisory lock, open to every role), and every lock a reader can ask for on the turns' table.
 */
const HOLDS: readonly string[] = [
  `select pg_try_advisory_lock(hashtext('schema_drift:main:feedback')) as held`,
  `select pg_try_advisory_lock(hashtext('schema_drift:main:survey')) as held`,
  `select * from ${BOOKKEEPING}.schema_drift_turns for update`,
  `select * from ${BOOKKEEPING}.schema_drift_turns for key share`,
  `lock table ${BOOKKEEPING}.schema_drift_turns in access exclusive mode`,
  `lock table ${BOOKKEEPING}.schema_drift_turns in access share mode`,
  `prepare hold_update as update ${BOOKKEEPING}.schema_drift_turns set resource = resource`,
  `prepare hold_insert as insert into ${BOOKKEEPING}.schema_drift_turns values ('main', 'feedback')`,
  `prepare hold_lock as select * from ${BOOKKEEPING}.schema_drift_turns for update`,
  `select * from ${BOOKKEEPING}.schema_drift for update`,
];

/**
 * A reader's session holding whatever `HOLDS` gets it, in a transaction left open. The advisory
 * keys are tried, not waited for: one reader's hold is enough.
 */
async function holdEverything(url: string): Promise<{ client: pg.Client; held: string[] }> {
  const client = new pg.Client({ connectionString: url, application_name: 'a reader holding locks' });
  client.on('error', () => {});
  await client.connect();
  await client.query(`set search_path = ${searchPath(SCHEMA)}`);
  await client.query('begin');
  const held: string[] = [];
  for (const statement of HOLDS) {
    await client.query('savepoint attempt');
    try {
      const { rows } = await client.query<{ held?: boolean }>(statement);
      if (rows[0]?.held !== false) held.push(statement);
    } catch {
      await client.query('rollback to savepoint attempt');
    }
  }
  return { client, held };
}

describe('a reader cannot hold up a sync window', () => {
  let roles: RolesDatabase;
  let sim: Simulator;
  const today = todayUtc(new Date());
  const from = addDays(today, -2);

  beforeAll(async () => {
    roles = await createRolesDatabase();
    // Every item carries fields the spec does not describe: every window takes its turn.
    sim = await startSimulator({ seed: 7, from, to: today, cap: 4000, extraFields: true });
  });
  afterAll(async () => {
    await sim?.stop();
    await roles?.drop();
  });

  it('an analyst and a monitor hold every lock they can get on what a window with unknown fields waits on, for the whole run: a 2-day backfill as the sync role still ends at once, exit 0, waiting on no lock of theirs', async () => {
    const readers: RoleName[] = ['analyst', 'monitor'];
    const sessions: Awaited<ReturnType<typeof holdEverything>>[] = [];
    try {
      for (const role of readers) sessions.push(await holdEverything(roles.url[role]));
      // The old keys are the analyst's to take (advisory locks are open to every role), so the
      // run must not need them.
      expect(sessions[0]?.held).toEqual(expect.arrayContaining([HOLDS[0], HOLDS[1]]));
      const { child, done } = startCli(
        ['backfill', '--from', from, '--to', addDays(today, -1), '--resources', 'feedback,survey'],
        cliEnv({
          DATABASE_URL: roles.url.sync,
          INSIGHTS_SCHEMA: SCHEMA,
          INSIGHTS_API_URL: sim.url,
          INSIGHTS_API_KEY: sim.apiKey,
          INSIGHTS_SOURCE_NAME: 'main',
          INSIGHTS_MAX_HEAP_MB: '0',
        }),
      );
      const started = Date.now();
      const killer = setTimeout(() => child.kill('SIGKILL'), DEADLINE_MS);
      const result = await done.finally(() => clearTimeout(killer));
      const elapsedMs = Date.now() - started;
      expect(result.code, result.stderr).toBe(0);
      expect(elapsedMs).toBeLessThan(DEADLINE_MS);
      expect(`${result.stdout}${result.stderr}`).not.toContain('waits on a lock held by another session');
      // The windows did take their turns: the inventory lists the fields of both resources.
      const inventory = await roles
        .as('sync')
        .pool.query<{ resource: string }>(
          `select distinct resource from ${BOOKKEEPING}.schema_drift order by 1`,
        );
      expect(inventory.rows.map((r) => r.resource)).toEqual(['feedback', 'survey']);
    } finally {
      for (const { client } of sessions) await client.end().catch(() => {});
    }
  }, 120_000);
});

/** The key Kysely's migrator took before (its PostgresAdapter's LOCK_ID). */
const KYSELY_MIGRATION_KEY = '3853314791062309107';

describe("a reader cannot hold up the owner's migrate", () => {
  let roles: RolesDatabase;
  beforeAll(async () => {
    roles = await createRolesDatabase({ migrate: false });
  });
  afterAll(() => roles?.drop());

  it("an analyst and a monitor hold the migrator's old advisory key for the whole migrate: the owner's migrate still runs every migration", async () => {
    const sessions: pg.Client[] = [];
    try {
      for (const role of ['analyst', 'monitor'] as const) {
        const client = new pg.Client({ connectionString: roles.url[role] });
        client.on('error', () => {});
        await client.connect();
        sessions.push(client);
        await client.query(`select pg_try_advisory_lock(${KYSELY_MIGRATION_KEY})`);
      }
      const held = await sessions[0]?.query<{ n: number }>(
        `select count(*)::int as n from pg_locks where locktype = 'advisory' and pid = pg_backend_pid()`,
      );
      expect(held?.rows[0]?.n).toBe(1);
      // Kysely waited up to an hour for the key; the test's own timeout is far shorter.
      const applied = await migrateAsOwner(roles);
      expect(applied.length).toBeGreaterThan(30);
    } finally {
      for (const client of sessions) await client.end().catch(() => {});
    }
  }, 120_000);
});
