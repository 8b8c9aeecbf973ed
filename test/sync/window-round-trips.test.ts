import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isPreparedStatement } from '../../src/db/transaction.js';
import { silentLogger } from '../../src/log/logger.js';
import type { Feedback } from '../../src/schemas/feedback.js';
import { storeNeighbours } from '../../src/sync/run-window.js';
import { driftInWindow, noteWindowDrift, windowDrift } from '../../src/sync/schema-drift.js';
import { storeWindow } from '../../src/sync/store-window.js';
import type { DayString } from '../../src/time/days.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { interceptQueries } from '../helpers/query-spy.js';
import { feedbackWindow } from '../load/window-items.js';
import { visitor } from '../webhooks/webhook-helpers.js';

/**
 * What one window costs the database in statements, once its connection has served a window
 * before (its staging tables made). A latency-bound backfill spends its
 * cores on round trips: one statement more per window is one more wake-up of the server and of
 * the process for each of thousands of windows. The counts are statements, not times.
 */
const SOURCE = 'trips';
const DAY = '2026-03-02' as DayString;

const item = (day: DayString, id: number): Feedback => ({
  id,
  feedback_id: 1,
  question: 'How was your visit?',
  session: `s-${id}`,
  comment: `comment ${id}`,
  rating: 4,
  rating_text: 'good',
  dt: `${day}T10:00:${String(id % 60).padStart(2, '0')}.000Z`,
  url: 'https://shop.example.test/',
  screenshot: `https://cdn.example.test/${id}.png`,
  visitor: visitor(`v-${id}`),
});
const day = (d: DayString, from: number) => Array.from({ length: 20 }, (_, i) => item(d, from + i));

describe('the statements of one window', () => {
  let t: TestDatabase;
  const statements: string[] = [];
  let counting = false;

  beforeAll(async () => {
    t = await createTestDatabase();
    interceptQueries(t.pool, (args, query) => {
      const first = args[0] as string | { text?: string } | undefined;
      if (counting) statements.push(typeof first === 'string' ? first : (first?.text ?? 'copy'));
      return query(...args);
    });
  });
  afterAll(() => t.drop());

  const windowOf = (valid: Feedback[], d: DayString, drift?: { total: number }) =>
    feedbackWindow({
      sourceId: SOURCE,
      day: d,
      valid,
      startDay: '2026-03-01' as DayString,
      today: '2026-03-10' as DayString,
      ...(drift === undefined ? {} : { drift }),
    });
  // As runWindow does it: the inventory in the window's statement when the items carry no unknown field.
  const oneWindow = async (valid: Feedback[], d: DayString) => {
    const ctx = { pool: t.pool, db: t.db, runId: null, now: () => new Date() };
    const drift = windowDrift(ctx, { sourceId: SOURCE, resource: 'feedback', day: d, valid });
    expect(driftInWindow(drift)).toBe(true);
    const stored = await storeWindow(t.pool, windowOf(valid, d, { total: drift.total }));
    await noteWindowDrift(ctx, silentLogger(), drift, stored);
  };

  it('a whole day without unknown fields: one statement for the window and its inventory', async () => {
    // The pool hands the idle connection back (last in, first out): it has its staging tables.
    await oneWindow(day('2026-03-01' as DayString, 1), '2026-03-01' as DayString);
    counting = true;
    await oneWindow(day(DAY, 100), DAY);
    counting = false;
    // The window: one call of store_window() (migration 0041), a transaction by itself: no
    // `begin`, no `commit`, no COPY, no settings of its own. 15 statements on b05cd51, and the
    // settings that opened its transaction. The inventory of unknown fields is updated by the same
    // call (migration 0047): a statement of its own after the window's before.
    expect(statements, statements.map((s) => s.slice(0, 80)).join('\n')).toEqual([
      'select store_window($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) as load',
    ]);
    expect(statements.filter((s) => /^(begin|commit)\b/.test(s))).toEqual([]);
    expect(statements.filter((s) => /pg_advisory_xact_lock/.test(s))).toEqual([]);
    expect(statements.filter((s) => /schema_drift/.test(s))).toEqual([]);
  });

  it("the window's statement is a named one: each connection parses it once", () => {
    expect(isPreparedStatement('select store_window($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) as load')).toBe(
      true,
    );
  });

  it("a neighbouring day's items that came along: one statement, no `begin` or `commit`", async () => {
    const neighbours = day('2026-03-03' as DayString, 200);
    const context = { sourceId: SOURCE, resource: 'feedback' as const, day: DAY, runId: null };
    const store = () =>
      storeNeighbours({ pool: t.pool }, { name: SOURCE }, 'feedback', context, {
        valid: neighbours,
        rejected: [],
      });
    statements.length = 0;
    counting = true;
    const added = await store();
    const again = await store();
    counting = false;
    expect(statements, statements.map((s) => s.slice(0, 80)).join('\n')).toEqual([
      'select store_window($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) as load',
      'select store_window($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) as load',
    ]);
    // Added when missing, never updated: their own window keeps them current.
    expect([added, again]).toEqual([20, 0]);
  });

  it("in the function, the visitors' upsert comes after every write of the items and their moves", async () => {
    // A busy visitor's row it locks waits for this window's end in every other window naming it.
    const { rows } = await sql<{ body: string }>`
      select prosrc as body from pg_proc where proname = 'merge_window_feedback'`.execute(t.db);
    const body = rows[0]?.body ?? '';
    // The one visitor merge's call (migration 0043).
    const visitorsAt = body.indexOf('merge_visitors(');
    const answerWrites = [...body.matchAll(/insert into feedback|update feedback|update key_collisions/g)]
      .map((m) => m.index ?? 0)
      // The promoted versions' writes come after: the visitors are read from the answer itself.
      .filter((i) => i < body.indexOf('-- Our own copies'));
    expect(visitorsAt).toBeGreaterThan(0);
    // The upsert (two forms), the collisions set aside, the marks cleared or set, the versions moved.
    expect(answerWrites).toHaveLength(7);
    expect(visitorsAt).toBeGreaterThan(Math.max(...answerWrites));
  });
});
