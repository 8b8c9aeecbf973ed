/**
 * A source's requests-per-second budget is held by the database. Reservations
 * made at once from several processes' connections get starts at least 1/rps apart.
 */
import type { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RequestAbortedError } from '../../src/api/abort.js';
import { createDb, createPool } from '../../src/db/connection.js';
import type { Database } from '../../src/db/database.js';
import { budgetPace, reserveRequestStart } from '../../src/sync/request-budget.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

describe('the request budget', () => {
  let t: TestDatabase;
  /** Five pools of two connections each: five processes, as far as the database can tell. */
  let processes: Kysely<Database>[];

  beforeAll(async () => {
    t = await createTestDatabase();
    processes = Array.from({ length: 5 }, () =>
      createDb(createPool({ url: t.url, schema: t.schema, max: 2, applicationName: 'budget-test' })),
    );
  });
  afterAll(async () => {
    await Promise.all(processes.map((db) => db.destroy()));
    await t.drop();
  });

  it('gives 50 reservations made at once from 10 connections starts at least 1/rps apart', async () => {
    const rps = 20;
    const reservations = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        reserveRequestStart(processes[i % processes.length] as Kysely<Database>, 'busy', rps),
      ),
    );
    const starts = reservations.map((r) => r.startsAtMs).sort((a, b) => a - b);
    const gaps = starts.slice(1).map((start, i) => start - (starts[i] as number));
    // 50 ms, to the microsecond the database keeps.
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(1000 / rps - 0.001);
    // Back to back, not spread out further: the budget is used, not wasted.
    expect(Math.max(...gaps)).toBeLessThan(1000 / rps + 0.001);
    // The first starts at once; the last waits for the 49 before it.
    const waits = reservations.map((r) => r.waitMs).sort((a, b) => a - b);
    expect(waits[0]).toBeLessThan(20);
    expect(waits.at(-1)).toBeGreaterThan(49 * (1000 / rps) - 500);
  });

  it("keeps sources apart: one source's queue of reservations does not delay another's", async () => {
    for (let i = 0; i < 20; i++) await reserveRequestStart(t.db, 'slow', 2);
    const other = await reserveRequestStart(t.db, 'quick', 2);
    expect(other.waitMs).toBeLessThan(20);
    const slow = await reserveRequestStart(t.db, 'slow', 2);
    expect(slow.waitMs).toBeGreaterThan(9_000);
  });

  it('starts from now after an idle spell: an unused budget is not saved up for a burst', async () => {
    const first = await reserveRequestStart(t.db, 'idle', 10);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const second = await reserveRequestStart(t.db, 'idle', 10);
    const third = await reserveRequestStart(t.db, 'idle', 10);
    expect(second.startsAtMs - first.startsAtMs).toBeGreaterThanOrEqual(300);
    expect(second.waitMs).toBeLessThan(20);
    expect(third.startsAtMs - second.startsAtMs).toBeGreaterThanOrEqual(100 - 0.001);
    expect(third.waitMs).toBeGreaterThan(50);
  });

  it('paces by waiting for the reservation, and a signal cuts the wait short', async () => {
    const pace = budgetPace(t.db, { name: 'paced', requestsPerSecond: 4 });
    if (pace === undefined) throw new Error('a source with a budget has a pace');
    const started = Date.now();
    for (let i = 0; i < 3; i++) await pace();
    // Three starts 250 ms apart: the third 500 ms after the first.
    expect(Date.now() - started).toBeGreaterThanOrEqual(490);

    const controller = new AbortController();
    const waiting = pace(controller.signal);
    setTimeout(() => controller.abort(new Error('shutdown')), 20);
    const before = Date.now();
    await expect(waiting).rejects.toBeInstanceOf(RequestAbortedError);
    expect(Date.now() - before).toBeLessThan(200);
  });

  it('costs nothing for a source without a budget: no pace, no row', async () => {
    expect(budgetPace(t.db, { name: 'free' })).toBeUndefined();
    const rows = await t.db.selectFrom('request_budgets').select('source_id').execute();
    expect(rows.map((r) => r.source_id)).not.toContain('free');
  });
});
