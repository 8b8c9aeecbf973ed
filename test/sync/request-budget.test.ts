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
    const ordered = [...reservations].sort((a, b) => a.startsAtMs - b.startsAtMs);
    // 50 ms apart at least, to the microsecond the database keeps; and back to back whenever a
    // reservation had to wait (it was made before its slot): the budget is used, not wasted. One
    // made after its slot had passed (a loaded machine) starts when it is made, and waits not.
    for (let i = 1; i < ordered.length; i++) {
      const { startsAtMs, waitMs } = ordered[i] as (typeof ordered)[number];
      const gap = startsAtMs - (ordered[i - 1] as (typeof ordered)[number]).startsAtMs;
      expect(gap).toBeGreaterThanOrEqual(1000 / rps - 0.001);
      if (waitMs > 0) expect(gap).toBeLessThan(1000 / rps + 0.001);
    }
    // The first starts at once; those made at once wait their turn.
    expect(ordered[0]?.waitMs).toBe(0);
    expect(reservations.filter((r) => r.waitMs > 0).length).toBeGreaterThan(0);
  });

  it("keeps sources apart: one source's queue of reservations does not delay another's", async () => {
    const first = await reserveRequestStart(t.db, 'slow', 2);
    for (let i = 1; i < 20; i++) await reserveRequestStart(t.db, 'slow', 2);
    const other = await reserveRequestStart(t.db, 'quick', 2);
    expect(other.waitMs).toBe(0);
    // The slow source's next request starts after its 20 reserved ones, 500 ms each.
    const slow = await reserveRequestStart(t.db, 'slow', 2);
    expect(slow.startsAtMs - first.startsAtMs).toBeGreaterThanOrEqual(20 * 500 - 0.001);
    expect(slow.waitMs).toBeGreaterThan(0);
  });

  it('starts from now after an idle spell: an unused budget is not saved up for a burst', async () => {
    const first = await reserveRequestStart(t.db, 'idle', 10);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const second = await reserveRequestStart(t.db, 'idle', 10);
    const third = await reserveRequestStart(t.db, 'idle', 10);
    expect(second.startsAtMs - first.startsAtMs).toBeGreaterThanOrEqual(300);
    expect(second.waitMs).toBe(0);
    // The third, made right after, waits for the second's interval, unless the machine took
    // longer than that to send it; either way not before it.
    expect(third.startsAtMs - second.startsAtMs).toBeGreaterThanOrEqual(100 - 0.001);
    if (third.waitMs > 0) expect(third.startsAtMs - second.startsAtMs).toBeLessThan(100 + 0.001);
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
