import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log/logger.js';
import type { Feedback } from '../../src/schemas/feedback.js';
import { noteSchemaDrift } from '../../src/sync/schema-drift.js';
import { storeWindow } from '../../src/sync/store-window.js';
import type { DayString } from '../../src/time/days.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { interceptQueries } from '../helpers/query-spy.js';
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

  const windowOf = (valid: Feedback[], d: DayString) => ({
    sourceId: SOURCE,
    baseUrl: 'http://api.example.test',
    resource: 'feedback' as const,
    day: d,
    status: 'done' as const,
    valid,
    rejected: [],
    requestedLimit: 1000,
    servedCount: valid.length,
    truncated: false,
    runId: null,
    startDay: '2026-03-01' as DayString,
    today: '2026-03-10' as DayString,
  });
  const oneWindow = async (valid: Feedback[], d: DayString) => {
    await storeWindow(t.pool, windowOf(valid, d));
    await noteSchemaDrift({ pool: t.pool, db: t.db, runId: null, now: () => new Date() }, silentLogger(), {
      sourceId: SOURCE,
      resource: 'feedback',
      day: d,
      valid,
    });
  };

  it('a whole day without unknown fields: one transaction for the window, one statement for the inventory', async () => {
    // The pool hands the idle connection back (last in, first out): it has its staging tables.
    await oneWindow(day('2026-03-01' as DayString, 1), '2026-03-01' as DayString);
    counting = true;
    await oneWindow(day(DAY, 100), DAY);
    counting = false;
    // `begin` goes with the window's settings, its first statement without parameters.
    const begins = statements.filter((s) => /^begin\b/.test(s)).length;
    expect(begins).toBe(1);
    expect(statements.filter((s) => s === 'begin')).toEqual([]);
    expect(statements.filter((s) => /pg_advisory_xact_lock/.test(s))).toEqual([]);
    expect(statements.filter((s) => /update "schema_drift"/.test(s))).toHaveLength(1);
    // absent and missing upstream marked by one statement, and no count after it.
    expect(statements.filter((s) => /set (absent_since|missing_upstream_since) = now\(\)/.test(s))).toEqual(
      [],
    );
    expect(statements.filter((s) => /count\(\*\)::int as n from "feedback"/.test(s))).toEqual([]);

    // Neither a separate read of the webhook rows the API contradicts (the upsert reads them), nor
    // separate statements to clear and to mark the day's rows, nor to reclassify the day's set-aside
    // versions and to read the versions other days serve.
    expect(
      statements.filter((s) => /select distinct t.visitor_id/.test(s) && !/insert into/.test(s)),
    ).toEqual([]);
    expect(statements.filter((s) => /set absent_since = null/.test(s) && !/marked as/.test(s))).toEqual([]);
    expect(statements.filter((s) => /set reason = 'moved'/.test(s) && !/distinct on/.test(s))).toEqual([]);
    expect(statements.filter((s) => /stage_visitor_observations/.test(s))).toEqual([]);

    // The visitors' upsert comes after every write of the items and their moves: a busy
    // visitor's row it locks waits for this window's commit in every other window naming it.
    const visitorsAt = statements.findIndex((s) => /insert into visitors/.test(s));
    const itemWrites = statements
      .map((s, i) => (/insert into "feedback"|update "feedback"|update key_collisions/.test(s) ? i : -1))
      .filter((i) => i >= 0);
    expect(itemWrites).toHaveLength(4);
    expect(visitorsAt).toBeGreaterThan(Math.max(...itemWrites));

    // 15, and the window's settings (its own work_mem and joins) that open the transaction. The
    // visitors are read from the staged items: no COPY of their own.
    expect(statements, statements.map((s) => s.slice(0, 80)).join('\n')).toHaveLength(16);
  });
});
