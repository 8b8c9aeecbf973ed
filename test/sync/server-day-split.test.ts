import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { serverDayOf } from '../../src/simulator/server-days.js';
import { dayStartMs } from '../../src/time/days.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst } from '../helpers/sync-harness.js';

/**
 * A server whose day is more than 10 hours off UTC's, both bounds inclusive, a cap between the
 * sizes of its server days and their sum: UTC day 2026-03-10 (the data's busy day) spans two server
 * days, together above the cap, each alone below it. One bound is never proved inclusive on its
 * own (on a server 11 hours behind UTC, an item 11 hours after startdate's midnight fits an
 * exclusive startdate on a server 13 hours ahead too; on one 12 hours ahead, the mirror image at
 * enddate), but the two sides' items together prove both inclusive: the day is read as its two
 * server days, never flagged. Before, it was flagged after one cut answer, with most of the other
 * server day's items unread: 715 of server day 03-10 (11 hours behind), 724 of server day 03-11
 * (12 hours ahead).
 */
const FROM = '2026-03-01';
const DAY = '2026-03-10';
const NIGHT = new Date('2026-03-15T03:00:00.000Z');
const HOUR_MS = 3_600_000;

describe.each([
  { name: '11 hours behind UTC', offset: -660 },
  { name: '12 hours ahead of UTC', offset: 720 },
])('a UTC day over the cap on a server day $name', ({ offset }) => {
  let t: TestDatabase;
  let sim: Simulator;
  let serverDays: [string, string];
  let cap: number;
  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 11, from: FROM, to: '2026-03-14' });
    sim.setOptions({ dayOffsetMinutes: offset });
    const perServerDay = sim.truth().meta.itemsPerServerDay.feedback;
    serverDays = [
      serverDayOf(dayStartMs(DAY), offset),
      serverDayOf(dayStartMs(DAY) + 24 * HOUR_MS - 1, offset),
    ];
    // One more than the larger server day: an answer as long as the cap may have been cut.
    cap = Math.max(...serverDays.map((day) => perServerDay[day] ?? 0)) + 1;
    sim.setOptions({ startdate: 'inclusive', enddate: 'inclusive', cap });
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
  });

  it('reads each server day it can read whole instead of flagging the UTC day', async () => {
    const truth = sim.truth();
    const perServerDay = truth.meta.itemsPerServerDay.feedback;
    // The premise: two server days, each below the cap, together above it.
    expect(serverDays[0]).not.toBe(serverDays[1]);
    expect((perServerDay[serverDays[0]] ?? 0) + (perServerDay[serverDays[1]] ?? 0)).toBeGreaterThan(cap);

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
    const unread = new Map<string, number>();
    for (const item of truth.feedback) {
      if (!item.dt.startsWith(DAY) || stored.has(`${item.id}/${item.feedback_id}`)) continue;
      const serverDay = serverDayOf(Date.parse(item.dt), offset);
      unread.set(serverDay, (unread.get(serverDay) ?? 0) + 1);
    }
    expect(Object.fromEntries(unread)).toEqual({});
    expect(window?.truncated).toBe(false);
  });
});
