import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WINDOW_ROWS_AT_ONCE, windowWritesOf } from '../../src/db/write-gate.js';
import { storeWindow } from '../../src/sync/store-window.js';
import type { DayString } from '../../src/time/days.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { feedbackItem, feedbackWindow } from '../load/window-items.js';

/**
 * Windows of a busy day write one or two at a time, however many are in flight
 * (src/db/write-gate.ts): two windows whose rows together pass WINDOW_ROWS_AT_ONCE do not write
 * at once, and both are stored.
 */
describe('window writes on one pool', () => {
  let t: TestDatabase;

  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(() => t.drop());

  it('go through one gate: two windows past its rows write one after the other', async () => {
    const size = Math.ceil(WINDOW_ROWS_AT_ONCE / 2) + 1;
    const days = ['2026-05-04', '2026-05-05'] as DayString[];
    const windows = days.map((day, n) =>
      feedbackWindow({
        sourceId: 'busy',
        day,
        valid: Array.from({ length: size }, (_, i) => feedbackItem(day, n * size + i)),
        startDay: '2026-05-04' as DayString,
        today: '2026-05-10' as DayString,
      }),
    );
    const stores = windows.map((window) => storeWindow(t.pool, window));
    // Both have built their parameters: the first writes, the second waits for it.
    expect(windowWritesOf(t.pool).stats()).toEqual({ writing: 1, rows: size, waiting: 1 });
    const loads = await Promise.all(stores);
    expect(loads.map((load) => load.inserted)).toEqual([size, size]);
    expect(windowWritesOf(t.pool).stats()).toEqual({ writing: 0, rows: 0, waiting: 0 });
    const { rows } = await sql<{ n: number }>`
      select count(*)::int as n from feedback where source_id = 'busy'`.execute(t.db);
    expect(rows[0]?.n).toBe(2 * size);
  });
});
