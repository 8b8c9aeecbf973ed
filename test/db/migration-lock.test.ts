import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { migrations } from '../../migrations/index.js';
import { createDb, createPool } from '../../src/db/connection.js';
import { migrateToLatest } from '../../src/db/migrator.js';
import { createTestDatabase } from '../helpers/database.js';

/**
 * Migrates take turns on the migrator's lock table (src/db/migration-lock.ts), not on an advisory
 * key any login may hold (test/reliability/analyst-holds.test.ts): two at once on an empty schema,
 * one applies every migration, the other then finds nothing pending.
 */
describe('the migration lock', () => {
  it('two migrates at once on an empty schema: one applies every migration, the other none, neither fails', async () => {
    const fresh = await createTestDatabase({ schema: 'insights_twice' });
    const pools = [0, 1].map(() => createPool({ url: fresh.url, schema: fresh.schema, max: 1 }));
    try {
      await sql`drop schema insights_twice, insights_twice_state cascade`.execute(fresh.db);
      // The schemas exist (as docs/roles.sql makes them), so both runs meet at the lock.
      await sql`create schema insights_twice; create schema insights_twice_state`.execute(fresh.db);
      const outcomes = await Promise.all(pools.map((pool) => migrateToLatest(createDb(pool), fresh.schema)));
      expect(outcomes.map((o) => o.error)).toEqual([undefined, undefined]);
      expect(outcomes.map((o) => o.applied.length).sort((a, b) => a - b)).toEqual([
        0,
        Object.keys(migrations).length,
      ]);
    } finally {
      for (const pool of pools) await pool.end();
      await fresh.drop();
    }
  });
});
