import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrations } from '../../migrations/index.js';
import { withClient } from '../../scripts/dev-database/admin.js';
import { bookkeepingSchema } from '../../src/db/bookkeeping.js';
import { cliEnv, runCli } from '../helpers/cli.js';
import { createTestDatabase, databaseServerUrl, type TestDatabase } from '../helpers/database.js';

/**
 * Reading commands never migrate; writing commands migrate only when something
 * is pending, and a role that cannot is told what to do, in one line.
 */

const LATEST = Object.keys(migrations).sort().at(-1) ?? '';
const PREVIOUS = Object.keys(migrations).sort().at(-2) ?? '';

async function tableExists(t: TestDatabase, schema: string, table: string): Promise<boolean> {
  const found = await sql<{
    found: boolean;
  }>`select to_regclass(${`${schema}.${table}`}) is not null as found`.execute(t.db);
  return found.rows[0]?.found === true;
}

async function schemaExists(t: TestDatabase, schema: string): Promise<boolean> {
  const found = await sql<{
    found: boolean;
  }>`select exists (select 1 from pg_namespace where nspname = ${schema}) as found`.execute(t.db);
  return found.rows[0]?.found === true;
}

describe('migrations and commands', () => {
  let t: TestDatabase;
  const tag = randomBytes(3).toString('hex');
  const reader = `insights_cli_reader_${tag}`;

  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(async () => {
    await t.drop();
    // The grants were in the dropped database: the role, cluster-wide, goes now.
    await withClient(databaseServerUrl(), (admin) => admin.query(`drop role if exists ${reader}`));
  });

  it('status on a database never migrated: exit 2, one line naming `migrate`, and nothing created', async () => {
    const schema = `fresh_${tag}`;
    const result = await runCli(['status'], cliEnv({ DATABASE_URL: t.url, INSIGHTS_SCHEMA: schema }));
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toMatch(
      /^insights-sync: the warehouse is not migrated \(.*\): run insights-sync migrate\n$/,
    );
    expect(await schemaExists(t, schema)).toBe(false);
    // report and forget --list read too.
    const list = await runCli(['forget', '--list'], cliEnv({ DATABASE_URL: t.url, INSIGHTS_SCHEMA: schema }));
    expect(list.code).toBe(2);
    expect(await schemaExists(t, schema)).toBe(false);
  });

  it('a writing command on a database never migrated migrates it first', async () => {
    const schema = `fresh_write_${tag}`;
    const result = await runCli(
      ['forget', '--visitor', 'v-1', '--not-seen-yet'],
      cliEnv({ DATABASE_URL: t.url, INSIGHTS_SCHEMA: schema }),
    );
    expect(result.code, result.stderr).toBe(0);
    expect(await tableExists(t, schema, 'feedback')).toBe(true);
    expect(await tableExists(t, bookkeepingSchema(schema), 'suppressed_visitors')).toBe(true);
  });

  it('with nothing pending, neither a reading nor a writing command runs the migrator (its lock table stays gone)', async () => {
    await sql`drop table kysely_migration_lock`.execute(t.db);
    const env = cliEnv({ DATABASE_URL: t.url });
    const status = await runCli(['status'], env);
    expect(status.code, status.stderr).toBe(0);
    const forget = await runCli(['forget', '--visitor', 'v-2', '--not-seen-yet'], env);
    expect(forget.code, forget.stderr).toBe(0);
    expect(await tableExists(t, bookkeepingSchema(t.schema), 'kysely_migration_lock')).toBe(false);
  });

  it('status on a warehouse one migration behind: exit 2, naming both migrations', async () => {
    await sql`delete from kysely_migration where name = ${LATEST}`.execute(t.db);
    try {
      const result = await runCli(['status'], cliEnv({ DATABASE_URL: t.url }));
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(
        new RegExp(
          `^insights-sync: the warehouse is at migration ${PREVIOUS} and this version needs ${LATEST} \\(.*\\): run insights-sync migrate\\n$`,
        ),
      );
    } finally {
      await sql`insert into kysely_migration (name, timestamp) values (${LATEST}, now())`.execute(t.db);
    }
  });

  it('a writing command as a role that does not own the schema, with a migration pending: exit 2, migrate as the owner', async () => {
    await withClient(t.url, async (admin) => {
      await admin.query(`create role ${reader} login password 'pw-${tag}'`);
      for (const schema of [t.schema, bookkeepingSchema(t.schema)]) {
        await admin.query(`grant usage on schema ${schema} to ${reader}`);
        await admin.query(
          `grant select, insert, update, delete on all tables in schema ${schema} to ${reader}`,
        );
      }
    });
    const url = new URL(t.url);
    url.username = reader;
    url.password = `pw-${tag}`;
    const env = cliEnv({ DATABASE_URL: url.toString() });
    // Nothing pending: the role works without migrating.
    const ok = await runCli(['forget', '--visitor', 'v-3', '--not-seen-yet'], env);
    expect(ok.code, ok.stderr).toBe(0);

    await sql`delete from kysely_migration where name = ${LATEST}`.execute(t.db);
    try {
      const result = await runCli(['forget', '--visitor', 'v-4', '--not-seen-yet'], env);
      expect(result.code).toBe(2);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
      expect(result.stderr).toContain(
        `has 1 migration(s) to apply (${LATEST}) and role ${reader} cannot apply them (it does not own the schema): run insights-sync migrate as the schema owner`,
      );
    } finally {
      await sql`insert into kysely_migration (name, timestamp) values (${LATEST}, now())`.execute(t.db);
    }
  });
});
