/**
 * The tool's own tables live in the bookkeeping schema `<schema>_state`, and a
 * warehouse made before migration 0014 (everything in one schema) is moved there by `migrate`,
 * its rows, grants and the analyst's view of them (sync_health) intact.
 */
import { randomBytes } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import { Migrator } from 'kysely/migration';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrations } from '../../migrations/index.js';
import { withClient } from '../../scripts/dev-database/admin.js';
import { bookkeepingSchema } from '../../src/db/bookkeeping.js';
import type { Database } from '../../src/db/database.js';
import { migrateToLatest, migrationState } from '../../src/db/migrator.js';
import { BOOKKEEPING_TABLES as MOVED } from '../helpers/bookkeeping-tables.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

async function tablesOf(db: Kysely<Database>, schema: string): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`
    select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = ${schema} and c.relkind = 'r' order by 1`.execute(db);
  return rows.map((r) => r.name);
}

describe('a new warehouse', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(() => t.drop());

  it('has the bookkeeping in <schema>_state and only data in <schema>', async () => {
    expect(await tablesOf(t.db, bookkeepingSchema(t.schema))).toEqual(MOVED);
    const data = await tablesOf(t.db, t.schema);
    for (const table of MOVED) expect(data).not.toContain(table);
    expect(data).toContain('feedback');
  });
});

describe('a warehouse of the one-schema layout (before migration 0014)', () => {
  let t: TestDatabase;
  const tag = randomBytes(3).toString('hex');
  const writer = `old_sync_${tag}`;
  const reader = `old_analyst_${tag}`;

  beforeAll(async () => {
    t = await createTestDatabase();
    const bookkeeping = bookkeepingSchema(t.schema);
    await sql`drop schema ${sql.id(t.schema)}, ${sql.id(bookkeeping)} cascade`.execute(t.db);
    await sql`create schema ${sql.id(t.schema)}`.execute(t.db);
    // The migrator as it was: its tables in the data schema, migrations up to 0013.
    const old = Object.fromEntries(Object.entries(migrations).filter(([name]) => name < '0014'));
    const result = await new Migrator({
      db: t.db,
      provider: { getMigrations: async () => old },
      migrationTableSchema: t.schema,
    }).migrateToLatest();
    expect(result.error).toBeUndefined();
    await t.db
      .insertInto('sources')
      .values({ source_id: 'main', base_url: 'http://insights.test' })
      .execute();
    await sql`insert into sync_windows (source_id, resource, day, status, attempts, item_count)
              values ('main', 'feedback', '2026-03-01', 'failed', 1, 0)`.execute(t.db);
    // The roles as the earlier docs/roles.sql granted them: on every table of the one schema.
    await withClient(t.url, async (admin) => {
      await admin.query(`create role ${writer} login; create role ${reader} login`);
      await admin.query(`grant usage on schema ${t.schema} to ${writer}, ${reader}`);
      await admin.query(
        `grant select, insert, update, delete on all tables in schema ${t.schema} to ${writer}`,
      );
      await admin.query(`grant select on all tables in schema ${t.schema} to ${reader}`);
    });
  });
  afterAll(async () => {
    await t.drop();
    await withClient(t.url.replace(/\/[^/]*$/, '/postgres'), async (admin) => {
      await admin.query(`drop role if exists ${writer}`);
      await admin.query(`drop role if exists ${reader}`);
    }).catch(() => {});
  });

  it('reads as one migration behind, then migrate moves every bookkeeping table with its rows', async () => {
    const before = await migrationState(t.db, t.schema);
    expect(before.pending).toEqual(Object.keys(migrations).filter((name) => name >= '0014'));
    const outcome = await migrateToLatest(t.db, t.schema);
    expect(outcome.error).toBeUndefined();
    expect(outcome.applied[0]).toBe('0014-bookkeeping-schema');
    expect(await tablesOf(t.db, bookkeepingSchema(t.schema))).toEqual(MOVED);
    expect((await migrationState(t.db, t.schema)).pending).toEqual([]);
    const windows = await t.db.selectFrom('sync_windows').select(['day', 'status']).execute();
    expect(windows).toEqual([{ day: '2026-03-01', status: 'failed' }]);
  });

  it('sync_health, in the data schema, still reads the moved ledger', async () => {
    const { rows } = await sql<{ failed_windows: number }>`
      select failed_days as failed_windows from sync_health where source_id = 'main' and resource = 'feedback'`.execute(
      t.db,
    );
    expect(rows.map((r) => Number(r.failed_windows))).toContain(1);
  });

  it('a role that wrote the bookkeeping still does (grants move, USAGE is given); one that only read loses it', async () => {
    const bookkeeping = bookkeepingSchema(t.schema);
    const asRole = (role: string, statement: string) =>
      withClient(t.url, async (client) => {
        await client.query(`set role ${role}`);
        return client.query(statement);
      });
    await asRole(writer, `update ${bookkeeping}.sync_windows set attempts = attempts + 1`);
    // Tables a later migration adds to the bookkeeping (the queue's) are granted to it too.
    await asRole(writer, `delete from ${bookkeeping}.queue_slots`);
    // And the request budgets' (a reservation is an upsert).
    await asRole(
      writer,
      `insert into ${bookkeeping}.request_budgets values ('main', now())
         on conflict (source_id) do update set next_at = excluded.next_at`,
    );
    await expect(asRole(reader, `select * from ${bookkeeping}.sync_windows`)).rejects.toThrow(
      /permission denied for schema/,
    );
    await asRole(reader, `select * from ${t.schema}.sync_health`);
  });

  it('a second migrate is a no-op', async () => {
    expect(await migrateToLatest(t.db, t.schema)).toEqual({ applied: [] });
  });
});
