import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase, databaseUrl, dropDatabase, withClient } from '../../scripts/dev-database/admin.js';
import { createDb, createPool } from '../../src/db/connection.js';
import { migrateToLatest } from '../../src/db/migrator.js';
import { acquireRunLock } from '../../src/db/run-lock.js';
import { forgetVisitor } from '../../src/privacy/forget-visitor.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { databaseServerUrl, type TestDatabase } from '../helpers/database.js';
import { runAgainst } from '../helpers/sync-harness.js';
import { truthItems, warehouseItems } from '../helpers/warehouse-truth.js';
import { feedbackBody, MAIN_URL, postJson, receiver } from '../webhooks/webhook-helpers.js';

/**
 * Guarantee 12: docs/roles.sql, run as written (only the role names made unique, since roles are
 * shared by the whole server), gives the tool everything it needs and nothing more, and analysts
 * read-only access to every table and view, those of later migrations included.
 */

const SCRIPT = readFileSync(fileURLToPath(new URL('../../docs/roles.sql', import.meta.url)), 'utf8');
const SCHEMA = 'insights';

describe('docs/roles.sql', () => {
  const tag = randomBytes(3).toString('hex');
  const owner = `insights_sync_${tag}`;
  const analysts = `insights_analyst_${tag}`;
  const alice = `alice_${tag}`;
  const password = randomBytes(12).toString('hex');
  const database = `insights_roles_${tag}`;
  let adminUrl: string;
  let ownerUrl: string;
  let aliceUrl: string;
  let sim: Simulator;
  /** The warehouse as the tool sees it: logged in as the owner role. */
  let tool: TestDatabase;

  const asRole = (url: string, role: string) => {
    const parsed = new URL(url);
    parsed.username = role;
    parsed.password = password;
    return parsed.toString();
  };

  beforeAll(async () => {
    const server = databaseServerUrl();
    await withClient(server, (admin) => createDatabase(admin, database));
    adminUrl = databaseUrl(server, database);
    await withClient(adminUrl, async (admin) => {
      await admin.query(SCRIPT.replaceAll('insights_sync', owner).replaceAll('insights_analyst', analysts));
      await admin.query(`alter role ${owner} password '${password}'`);
      await admin.query(`create role ${alice} login password '${password}' in role ${analysts}`);
    });
    ownerUrl = asRole(adminUrl, owner);
    aliceUrl = asRole(adminUrl, alice);
    const pool = createPool({ url: ownerUrl, schema: SCHEMA });
    tool = { url: ownerUrl, schema: SCHEMA, pool, db: createDb(pool), drop: async () => {} };
    sim = await startSimulator({
      seed: 3,
      from: '2026-03-01',
      to: '2026-03-05',
      cap: 4000,
      malformedRate: 0.1,
    });
  });
  afterAll(async () => {
    await sim?.stop();
    await tool?.db.destroy();
    await withClient(databaseServerUrl(), async (admin) => {
      await dropDatabase(admin, database);
      for (const role of [alice, analysts, owner]) await admin.query(`drop role if exists ${role}`);
    });
  });

  it('the tool role is no superuser and can create neither databases, roles nor other schemas', async () => {
    const role = await withClient(adminUrl, (admin) =>
      admin.query<{
        rolsuper: boolean;
        rolcreatedb: boolean;
        rolcreaterole: boolean;
        rolreplication: boolean;
      }>('select rolsuper, rolcreatedb, rolcreaterole, rolreplication from pg_roles where rolname = $1', [
        owner,
      ]),
    );
    expect(role.rows[0]).toEqual({
      rolsuper: false,
      rolcreatedb: false,
      rolcreaterole: false,
      rolreplication: false,
    });
    await withClient(ownerUrl, async (client) => {
      await expect(client.query('create schema elsewhere')).rejects.toThrow(/permission denied/);
      await expect(client.query('create table public.t (x int)')).rejects.toThrow(/permission denied/);
    });
  });

  it('as that role the tool migrates, syncs, takes the run lock, receives webhooks and forgets a visitor', async () => {
    const outcome = await migrateToLatest(tool.db, SCHEMA);
    expect(outcome.error).toBeUndefined();
    expect(outcome.applied.length).toBeGreaterThan(2);
    // Migrating again finds the schema there (no CREATE on the database needed).
    expect((await migrateToLatest(tool.db, SCHEMA)).error).toBeUndefined();

    const lock = await acquireRunLock({ url: ownerUrl, schema: SCHEMA });
    const result = await runAgainst(tool, sim, {
      now: new Date('2026-03-06T05:00:00.000Z'),
      settings: { maxInvalidShare: 1 },
    });
    await lock.release();
    expect(result.status).toBe('ok');
    expect(await warehouseItems(tool)).toEqual(truthItems(sim.truth()));

    const app = receiver(tool.pool);
    try {
      expect((await postJson(app, MAIN_URL, feedbackBody({ id: 77 }))).statusCode).toBe(200);
    } finally {
      await app.close();
    }
    const visitor = sim.truth().feedback[0]?.visitor.id ?? '';
    expect((await forgetVisitor(tool.db, { visitorId: visitor })).visitors).toBeGreaterThan(0);
  });

  it('an analyst reads every table and view, and can change nothing', async () => {
    await withClient(aliceUrl, async (client) => {
      await client.query(`set search_path = ${SCHEMA}`);
      const relations = await client.query<{ name: string }>(
        `select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
         where n.nspname = $1 and c.relkind in ('r', 'v', 'm') order by 1`,
        [SCHEMA],
      );
      expect(relations.rows.length).toBeGreaterThan(15);
      for (const { name } of relations.rows)
        await client.query(`select * from ${client.escapeIdentifier(name)} limit 1`);
      const denied = [
        `insert into sources (source_id, base_url) values ('x', 'y')`,
        'update feedback set comment = null',
        'delete from visitors',
        'truncate rejects',
        'drop table feedback',
        'create table analyst_table (x int)',
        'alter table feedback add column x int',
        `update watermarks set day = '2099-01-01'`,
      ];
      for (const statement of denied) {
        await expect(client.query(statement), statement).rejects.toThrow(/permission denied|must be owner/);
      }
    });
  });

  it('an analyst reads a table a later migration creates (default privileges)', async () => {
    await sql`create table later_migration (x int)`.execute(tool.db);
    await sql`insert into later_migration values (1)`.execute(tool.db);
    await withClient(aliceUrl, async (client) => {
      const rows = await client.query(`select x from ${SCHEMA}.later_migration`);
      expect(rows.rows).toEqual([{ x: 1 }]);
    });
  });

  it('without the analyst role, a login sees nothing of the warehouse', async () => {
    const outsider = `outsider_${tag}`;
    await withClient(adminUrl, (admin) =>
      admin.query(`create role ${outsider} login password '${password}'`),
    );
    try {
      const client = new pg.Client({ connectionString: asRole(adminUrl, outsider) });
      await client.connect();
      try {
        await expect(client.query(`select * from ${SCHEMA}.visitors`)).rejects.toThrow(/permission denied/);
      } finally {
        await client.end();
      }
    } finally {
      await withClient(adminUrl, (admin) => admin.query(`drop role ${outsider}`));
    }
  });
});
