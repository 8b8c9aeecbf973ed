import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inTransaction } from '../../src/db/transaction.js';
import { recordWindowDrift, type WindowDrift } from '../../src/load/schema-drift.js';
import type { DayString } from '../../src/time/days.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

/**
 * A window without unknown fields updates the inventory without waiting for its turn: while a
 * window that inserts a field holds the turn, the update waits only on the rows both touch, and
 * ends as if it had gone first. No window's items are counted twice or lost.
 */
describe('the inventory, updated by windows side by side', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase();
    await t.pool.query(`insert into sources (source_id, base_url) values ('s', 'http://api.example.test')`);
  });
  afterAll(() => t.drop());

  const drift = (total: number, counts: [string, number][]): WindowDrift => ({
    sourceId: 's',
    resource: 'feedback',
    day: '2026-03-02' as DayString,
    runId: null,
    total,
    counts: new Map(counts),
    seenAt: new Date('2026-03-03T00:00:00.000Z'),
  });
  /** A backend of this database waits for a tuple or transaction lock (not an advisory one). */
  const waitingOnRowLock = async () => {
    const { rows } = await t.pool.query<{ n: number }>(
      `select count(*)::int as n from pg_locks l join pg_stat_activity a using (pid)
        where not l.granted and l.locktype in ('transactionid', 'tuple') and a.datname = current_database()`,
    );
    return (rows[0]?.n ?? 0) > 0;
  };
  const totals = async () =>
    Object.fromEntries(
      (
        await t.db
          .selectFrom('schema_drift')
          .select(['field_path', 'last_run_total', 'last_run_items'])
          .execute()
      ).map((r) => [r.field_path, [r.last_run_total, r.last_run_items]]),
    );

  it('a window without unknown fields does not wait for the turn a window inserting one holds', async () => {
    await inTransaction(t.pool, (trx) => recordWindowDrift(trx.db, drift(10, [['known', 10]])));
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let inserted: () => void = () => {};
    const insertedField = new Promise<void>((resolve) => {
      inserted = resolve;
    });
    // Window A: a new field, its turn held until it commits.
    const a = inTransaction(t.pool, async (trx) => {
      const firstSeen = await recordWindowDrift(
        trx.db,
        drift(3, [
          ['known', 3],
          ['fresh', 3],
        ]),
      );
      inserted();
      await held;
      return firstSeen;
    });
    await insertedField;
    // Window B, no unknown field: on its own connection, it waits on the row A updated, not on A's turn.
    const b = recordWindowDrift(t.db, drift(5, []));
    // A commits only once B's update waits on a row lock (A's on 'known'): B took no turn first.
    while (!(await waitingOnRowLock())) await new Promise((resolve) => setTimeout(resolve, 20));
    release();
    expect(await a).toEqual(['fresh']);
    expect(await b).toEqual([]);
    // As if B went first: 'known' counts the three windows' items, 'fresh' only A's.
    expect(await totals()).toEqual({ known: [18, 13], fresh: [3, 3] });
  });
});
