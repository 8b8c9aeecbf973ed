import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { mergeFunctionDefinitions, testMigrator } from '../helpers/merge-migrations.js';

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

  const definitions = () => mergeFunctionDefinitions(t);
  const SUB_SELECTS = [
    /and \(select v_staged > v_inserted\)\)/,
    /and \(select v_inserted \+ v_updated < v_staged\)/,
  ];

  it('down gives back the conditions of 0044, up the sub-selects again, rights and settings kept', async () => {
    const migrator = testMigrator(t);
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
