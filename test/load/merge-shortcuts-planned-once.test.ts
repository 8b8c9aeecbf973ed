import { sql } from 'kysely';
import { type Migration, Migrator } from 'kysely/migration';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrations } from '../../migrations/index.js';
import { bookkeepingSchema } from '../../src/db/bookkeeping.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

/**
 * The merge's shortcuts on its counters are sub-selects (migration 0046), which a custom plan
 * cannot fold away: the statement's plan is the same for every window and the generic one is
 * kept. What they decide is unchanged (test/load/window-merge-passes.test.ts: the marks of a
 * served row cleared, an earlier day's version set aside, each among new rows).
 */
describe('migration 0046 makes the shortcuts sub-selects, and back', () => {
  let t: TestDatabase;

  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(() => t.drop());

  const definitions = async () =>
    (
      await sql<{ name: string; def: string; acl: string | null }>`
        select p.proname as name, pg_get_functiondef(p.oid) as def, p.proacl::text as acl
          from pg_proc p join pg_namespace n on n.oid = p.pronamespace
         where n.nspname = ${bookkeepingSchema(t.schema)} and p.proname like 'merge_window_%'
         order by p.proname`.execute(t.db)
    ).rows;
  const SUB_SELECTS = [
    /and \(select v_staged > v_inserted\)\)/,
    /and \(select v_inserted \+ v_updated < v_staged\)/,
  ];

  it('down gives back the conditions of 0044, up the sub-selects again, rights and settings kept', async () => {
    const migrator = new Migrator({
      db: t.db,
      provider: { getMigrations: async (): Promise<Record<string, Migration>> => migrations },
      migrationTableSchema: bookkeepingSchema(t.schema),
    });
    const latest = await definitions();
    expect(latest).toHaveLength(3);
    for (const { name, def } of latest) for (const s of SUB_SELECTS) expect(def, name).toMatch(s);
    expect((await migrator.migrateTo('0045-staging-kept-planned')).error).toBeUndefined();
    for (const { name, def } of await definitions()) {
      for (const s of SUB_SELECTS) expect(def, name).not.toMatch(s);
      expect(def, name).toMatch(/and v_inserted \+ v_updated < v_staged/);
    }
    expect((await migrator.migrateToLatest()).error).toBeUndefined();
    expect(await definitions()).toEqual(latest);
  });
});
