import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { inTransaction } from '../../src/db/transaction.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { interceptQueries } from '../helpers/query-spy.js';

/**
 * `begin` travels with a transaction's first statement when that one has no parameters: one
 * round trip fewer, the same transaction.
 */
describe('inTransaction opens its transaction with its first statement', () => {
  let t: TestDatabase;
  /** Every text a pooled client was asked to run, in order. */
  const sent: string[] = [];
  beforeAll(async () => {
    t = await createTestDatabase();
    await t.pool.query('create table begin_probe (n int not null)');
    interceptQueries(t.pool, (args, query) => {
      const [first] = args;
      sent.push(typeof first === 'string' ? first : 'copy');
      return query(...args);
    });
  });
  beforeEach(async () => {
    await t.pool.query('truncate begin_probe');
    sent.length = 0;
  });
  afterAll(async () => {
    await t.drop();
  });

  it('a first statement without parameters: one query with begin, its own result returned', async () => {
    const n = await inTransaction(t.pool, async (trx) => {
      const { rows } = await sql<{ n: number }>`select 41 + 1 as n`.execute(trx.db);
      await sql`insert into begin_probe (n) values (${rows[0]?.n})`.execute(trx.db);
      return rows[0]?.n;
    });
    expect(n).toBe(42);
    expect(sent).toEqual(['begin; select 41 + 1 as n', 'insert into begin_probe (n) values ($1)', 'commit']);
    const { rows } = await t.pool.query('select n from begin_probe');
    expect(rows).toEqual([{ n: 42 }]);
  });

  it('what that first statement wrote is rolled back with the transaction', async () => {
    await expect(
      inTransaction(t.pool, async (trx) => {
        await sql`insert into begin_probe (n) values (1)`.execute(trx.db);
        throw new Error('changed my mind');
      }),
    ).rejects.toThrow('changed my mind');
    expect(sent[0]).toBe('begin; insert into begin_probe (n) values (1)');
    const { rows } = await t.pool.query('select n from begin_probe');
    expect(rows).toEqual([]);
  });

  it('a first statement with parameters, or a COPY: begin on its own first, both rolled back', async () => {
    for (const first of ['statement', 'copy'] as const) {
      sent.length = 0;
      await expect(
        inTransaction(t.pool, async (trx) => {
          if (first === 'statement') await sql`insert into begin_probe (n) values (${7})`.execute(trx.db);
          else await trx.copyRows('begin_probe', ['n'], [[7]]);
          await sql`insert into begin_probe (n) values (8)`.execute(trx.db);
          throw new Error('changed my mind');
        }),
      ).rejects.toThrow('changed my mind');
      expect(sent[0], first).toBe('begin');
      expect(sent.at(-1), first).toBe('rollback');
      const { rows } = await t.pool.query('select n from begin_probe');
      expect(rows, first).toEqual([]);
    }
  });
});
