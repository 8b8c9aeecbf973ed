import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inTransaction } from '../../src/db/transaction.js';
import { recordProofs } from '../../src/ledger/ledger.js';
import { storeWindow } from '../../src/sync/store-window.js';
import type { DayString } from '../../src/time/days.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { feedbackItem, feedbackWindow } from '../load/window-items.js';

/**
 * The ledger under the run's proofs (src/extract/reading-session.ts): a flag is not cleared by a
 * shorter read, a reopened day says so until a read settles it again, and a proved day carries
 * the time of its proof.
 */

const SOURCE = 'proofs';
const DAY = '2026-03-02' as DayString;

describe('the ledger under the run’s proofs', () => {
  let t: TestDatabase;

  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(async () => {
    await t.drop();
  });

  const store = (count: number, truncated: boolean, day = DAY) => {
    const valid = Array.from({ length: count }, (_, i) => feedbackItem(day, i + 1));
    return storeWindow(
      t.pool,
      feedbackWindow({
        sourceId: SOURCE,
        day,
        valid,
        truncated,
        startDay: '2026-03-01' as DayString,
        today: '2026-03-10' as DayString,
      }),
    );
  };
  const row = (day = DAY) =>
    t.db
      .selectFrom('sync_windows')
      .select(['truncated', 'item_count', 'reopened_at', 'proved_at'])
      .where('source_id', '=', SOURCE)
      .where('day', '=', day)
      .executeTakeFirstOrThrow();

  it('keeps a day flagged truncated when a later read holds fewer of its items and is not flagged', async () => {
    await store(121, true);
    await store(0, false);
    expect(await row()).toMatchObject({ truncated: true, item_count: 0 });
    // A read that holds as many as the flagged one, whole, clears it.
    await store(130, false);
    expect(await row()).toMatchObject({ truncated: false, item_count: 130 });
  });

  it('marks reopened days until a read settles them, and proved days with their proof', async () => {
    const other = '2026-03-03' as DayString;
    await store(5, false, other);
    await inTransaction(t.pool, (trx) =>
      recordProofs(trx, { sourceId: SOURCE, resource: 'feedback' }, { reopened: [DAY], proved: [other] }),
    );
    expect((await row()).reopened_at).not.toBeNull();
    expect((await row(other)).proved_at).not.toBeNull();
    // Settled again: no longer reopened, and unproved until the next proof.
    await store(130, false);
    expect(await row()).toMatchObject({ reopened_at: null, proved_at: null });
  });
});
