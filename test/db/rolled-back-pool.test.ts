/**
 * The dry run's pool: the code run on it sees its own writes, transactions and failures behave as
 * on a pool of their own, and once discarded nothing of it is left.
 */
import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createDb } from '../../src/db/connection.js';
import { asSavepoint, rolledBackPool } from '../../src/db/rolled-back-pool.js';
import { inTransaction } from '../../src/db/transaction.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

describe('a rolled-back pool', () => {
  let t: TestDatabase;
  beforeEach(async () => {
    t = await createTestDatabase();
  });
  afterEach(async () => {
    await t.drop();
  });

  const sourceCount = async (db = t.db) =>
    Number(
      (
        await db
          .selectFrom('sources')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirst()
      )?.n,
    );

  it('sees its own writes, undoes a failed transaction alone, and leaves nothing once discarded', async () => {
    const dry = await rolledBackPool(t.pool);
    const db = createDb(dry.pool);
    await inTransaction(dry.pool, async (trx) => {
      await trx.db
        .insertInto('sources')
        .values({ source_id: 'kept-for-now', base_url: 'http://a' })
        .execute();
    });
    await expect(
      inTransaction(dry.pool, async (trx) => {
        await trx.db.insertInto('sources').values({ source_id: 'undone', base_url: 'http://b' }).execute();
        await sql`select 1 / 0`.execute(trx.db);
      }),
    ).rejects.toThrow(/division by zero/);
    // A statement that fails on its own undoes only itself.
    await expect(sql`select 1 / 0`.execute(db)).rejects.toThrow(/division by zero/);
    await db.insertInto('sources').values({ source_id: 'also', base_url: 'http://c' }).execute();
    const seen = await db.selectFrom('sources').select('source_id').orderBy('source_id').execute();
    expect(seen.map((s) => s.source_id)).toEqual(['also', 'kept-for-now']);
    // Nobody else sees it meanwhile.
    expect(await sourceCount()).toBe(0);
    await dry.discard();
    expect(await sourceCount()).toBe(0);
  });

  it("turns the code's transactions into savepoints, and a commit empties the staging tables as one would", () => {
    expect(asSavepoint('begin')).toBe('savepoint dry_tx');
    expect(asSavepoint("begin; set local work_mem = '32MB'")).toBe(
      "savepoint dry_tx; set local work_mem = '32MB'",
    );
    expect(asSavepoint('start transaction isolation level serializable')).toBe('savepoint dry_tx');
    expect(asSavepoint('commit')).toMatch(/^release savepoint dry_tx; do \$\$/);
    expect(asSavepoint('rollback')).toBe('rollback to savepoint dry_tx; release savepoint dry_tx');
    expect(asSavepoint('select 1')).toBe('select 1');
    const named = { name: 'x', text: 'select $1', values: [1] };
    expect(asSavepoint(named)).toBe(named);
  });
});
