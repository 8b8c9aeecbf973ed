import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool } from '../../src/db/connection.js';
import type { Feedback } from '../../src/schemas/feedback.js';
import { storeWindow } from '../../src/sync/store-window.js';
import { addDays, type DayString } from '../../src/time/days.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { feedbackItem, feedbackWindow } from './window-items.js';

/**
 * The window merge keeps the generic plans of its statements (migration 0047): a connection that
 * stored days, then stored them again unchanged (statements skipped), then changed, plans the
 * merge's statements again only when its staging table is truncated, not on every window.
 * PL/pgSQL alone keeps a generic plan only while it costs less than the mean of the custom plans
 * made so far, a mean the unchanged windows no longer moved.
 */
const FIRST = '2026-03-01' as DayString;
const DAYS = Array.from({ length: 40 }, (_, i) => addDays(FIRST, i));

describe("a connection's merge plans across windows", () => {
  let t: TestDatabase;
  // One connection: plans are the connection's own.
  let pool: pg.Pool;
  let client: pg.PoolClient;
  const plannings: string[] = [];

  beforeAll(async () => {
    t = await createTestDatabase();
    pool = createPool({ url: t.url, schema: t.schema, max: 1 });
    client = await pool.connect();
    client.on('notice', (notice) => {
      // log_planner_stats: one notice a planning, where names the function's statement.
      if (notice.message === 'PLANNER STATISTICS') plannings.push(statementOf(notice.where));
    });
    client.release();
  });
  afterAll(async () => {
    await pool.end();
    await t.drop();
  });

  /** The day's 20 items (ids of their own), as first served or with comments changed. */
  const store = (n: number, comment?: string) => {
    const day = DAYS[n] as DayString;
    const valid: Feedback[] = Array.from({ length: 20 }, (_, i) =>
      feedbackItem(day, 1000 + 20 * n + i, comment === undefined ? undefined : `${comment} ${i}`),
    );
    return storeWindow(
      pool,
      feedbackWindow({ sourceId: 'plans', day, valid, startDay: FIRST, today: addDays(FIRST, 60) }),
    );
  };

  it('stored, stored again unchanged, then changed: each statement planned on few of the changed windows', async () => {
    for (const n of DAYS.keys()) await store(n);
    for (const round of [1, 2, 3, 4])
      for (const n of DAYS.keys()) expect((await store(n)).unchanged, `${round}`).toBe(20);
    await pool.query('set client_min_messages = log; set log_planner_stats = on');
    try {
      for (const n of DAYS.keys()) expect((await store(n, 'changed')).updated).toBe(20);
    } finally {
      await pool.query('reset log_planner_stats; reset client_min_messages');
    }
    const perStatement = new Map<string, number>();
    for (const s of plannings) perStatement.set(s, (perStatement.get(s) ?? 0) + 1);
    // A truncation of the staging table (some forty windows of 20 items apart) plans each again.
    for (const [statement, count] of perStatement) expect(count, statement).toBeLessThanOrEqual(4);
  });
});

/** The merge's statement a planning was for: its function and line. */
function statementOf(where: string | undefined): string {
  return (
    /PL\/pgSQL function (\S+) line (\d+)/
      .exec(where ?? '')
      ?.slice(1)
      .join(' line ') ?? 'top level'
  );
}
