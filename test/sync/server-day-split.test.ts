import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { serverDayOf } from '../../src/simulator/server-days.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst, simulatorSource } from '../helpers/sync-harness.js';

/**
 * A server whose day starts 11 hours after UTC midnight (UTC-11), both bounds inclusive, a cap of
 * 800: UTC day 2026-03-10 spans the end of server day 03-09 (717 items) and the start of server
 * day 03-10 (791). Together they are above the cap, each alone below it. The server's start bound
 * is never proved inclusive on its own (an item 11 hours after startdate's midnight fits an
 * exclusive bound on a server 13 hours ahead too), but the items served past enddate's midnight
 * prove both bounds inclusive together: the day is read as its two server days, never flagged.
 */
const FROM = '2026-03-01';
const DAY = '2026-03-10';
const OFFSET = -660;
const NIGHT = new Date('2026-03-15T03:00:00.000Z');

describe('a UTC day over the cap on a server day off UTC', () => {
  let t: TestDatabase;
  let sim: Simulator;
  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 11, from: FROM, to: '2026-03-14' });
    sim.setOptions({ dayOffsetMinutes: OFFSET, startdate: 'inclusive', enddate: 'inclusive', cap: 800 });
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
  });

  it('reads each server day it can read whole instead of flagging the UTC day', async () => {
    const truth = sim.truth();
    const perServerDay = truth.meta.itemsPerServerDay.feedback;
    // The premise: the UTC day's two server days are each below the cap, together above it.
    expect([perServerDay['2026-03-09'], perServerDay[DAY]].map((n) => (n ?? 0) <= 800)).toEqual([true, true]);
    expect(truth.meta.itemsPerUtcDay.feedback[DAY]).toBeLessThan(
      (perServerDay['2026-03-09'] ?? 0) + (perServerDay[DAY] ?? 0),
    );

    const run = await runAgainst(t, sim, {
      now: NIGHT,
      request: { trigger: 'backfill', range: { from: FROM, to: DAY }, resources: ['feedback'] },
    });
    const window = run.windows.find((w) => w.resource === 'feedback' && w.day === DAY);
    const rows = await t.db
      .selectFrom('feedback')
      .select(['id', 'feedback_id'])
      .where('source_id', '=', 'main')
      .execute();
    const stored = new Set(rows.map((r) => `${r.id}/${r.feedback_id}`));
    const unread = truth.feedback.filter(
      (item) => item.dt.startsWith(DAY) && !stored.has(`${item.id}/${item.feedback_id}`),
    );
    const unreadByServerDay = new Map<string, number>();
    for (const item of unread) {
      const serverDay = serverDayOf(Date.parse(item.dt), OFFSET);
      unreadByServerDay.set(serverDay, (unreadByServerDay.get(serverDay) ?? 0) + 1);
    }
    // Before, the UTC day was flagged after one cut answer: 707 items of server day 03-10 unread.
    expect(Object.fromEntries(unreadByServerDay)).toEqual({});
    expect(window?.truncated).toBe(false);
  });
});
