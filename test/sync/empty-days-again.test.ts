/**
 * A day an earlier run settled empty, read again (the same backfill, a lookback): asked the widest
 * request first, it is settled on that one request while it is still empty, and its items are
 * stored once it has some; never settled empty on the ledger's word.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WINDOWED_RESOURCES } from '../../src/schemas/resources.js';
import { itemsPerDay, type Simulator, startSimulator } from '../../src/simulator/server.js';
import type { RunResult } from '../../src/sync/outcomes.js';
import { addDays, type DayString } from '../../src/time/days.js';
import { compareWithTruth } from '../helpers/completeness-oracle.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst } from '../helpers/sync-harness.js';

const FROM: DayString = '2026-03-01';
const TO: DayString = '2026-03-12';
const NIGHT = new Date('2026-03-13T03:00:00.000Z');

describe('days an earlier run settled empty, read again', () => {
  let t: TestDatabase;
  let sim: Simulator;
  const backfill = () =>
    runAgainst(t, sim, { now: NIGHT, request: { trigger: 'backfill', range: { from: FROM, to: TO } } });
  const emptyDaysOf = (resource: (typeof WINDOWED_RESOURCES)[number]) => {
    const counts = itemsPerDay(sim.truth(), resource);
    const days: DayString[] = [];
    for (let day = FROM; day <= TO; day = addDays(day, 1)) if ((counts.get(day) ?? 0) === 0) days.push(day);
    return days;
  };
  const windowOf = (run: RunResult, resource: string, day: string) =>
    run.windows.find((w) => w.resource === resource && w.day === day);

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 4242, from: FROM, to: TO });
    expect((await backfill()).status).toBe('ok');
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
  });

  it('still empty, each is settled on one request: the widest, holding its neighbours on both sides', async () => {
    const again = await backfill();
    expect(again.status).toBe('ok');
    for (const resource of WINDOWED_RESOURCES) {
      const empty = emptyDaysOf(resource);
      // The simulator leaves the third day of a range empty, whatever the seed.
      expect(empty.length, resource).toBeGreaterThan(0);
      for (const day of empty) {
        const window = windowOf(again, resource, day);
        expect(window, `${resource} ${day}`).toMatchObject({ status: 'done', truncated: false, requests: 1 });
      }
    }
  });

  it('with an item now, it is read whole: the item is stored and the day is not settled empty', async () => {
    const day = emptyDaysOf('feedback')[0] as DayString;
    // An item of the next day moves into the empty day (an edit of its dt upstream).
    sim.moveItem('feedback', addDays(day, 2), 0, day);
    const again = await backfill();
    expect(again.status).toBe('ok');
    expect(windowOf(again, 'feedback', day)).toMatchObject({ status: 'done', fetched: 1, truncated: false });
    const found = await compareWithTruth(t, 'main', sim.truth(), { from: FROM, to: TO });
    expect(found.feedback.trulyTruncated).not.toContain(day);
    for (const resource of WINDOWED_RESOURCES) expect(found[resource].missedFlags, resource).toEqual([]);
  });
});
