/**
 * A day settled whole at exactly a cap its run never proved: a rolling deploy lowered the cap
 * from 100 to 60 near the run's end, and the run's last day at 60 came too late and too alone for
 * its checks. Played here by the ledger and the table as that run leaves them (the day's rows cut
 * to 60, its window done at 60, `uncapped_served` 60), on a server on the same data now capped at
 * 60. The next nightly proves the cap on its own days and, storing it, reopens every day settled
 * whole at exactly 60; the night after reads the day first, and flags it.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { itemsPerDay, type Simulator, startSimulator } from '../../src/simulator/server.js';
import { addDays, type DayString } from '../../src/time/days.js';
import { compareWithTruth } from '../helpers/completeness-oracle.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst } from '../helpers/sync-harness.js';

const FROM: DayString = '2026-03-01';
const TO: DayString = '2026-03-20';
const NIGHT = new Date('2026-03-21T03:00:00.000Z');
/** 20-100 feedback items a day: a normal source, every day below the old cap of 100. */
const VOLUME = { feedbackPerDay: 60, surveyPerDay: 30, recordingsPerDay: 20, busyDayFeedback: 90 };
const SEED = 91;

describe('a day settled at a cap lowered before its run could prove it', () => {
  let t: TestDatabase;
  let sim: Simulator;
  let day: DayString;
  const nightAfter = (n: number) => new Date(NIGHT.getTime() + n * 86_400_000);
  const windowOf = () =>
    t.db
      .selectFrom('sync_windows')
      .select(['truncated', 'reopened_at', 'uncapped_served'])
      .where('resource', '=', 'feedback')
      .where('day', '=', day)
      .executeTakeFirstOrThrow();

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: SEED, from: FROM, to: TO, volume: VOLUME, caps: { feedback: 100 } });
    const first = await runAgainst(t, sim, {
      now: NIGHT,
      request: { trigger: 'backfill', range: { from: FROM, to: TO } },
    });
    expect(first.status).toBe('ok');
    // A day of 61 to 99 items (settled whole under the old cap), outside the next nightlies' lookback.
    day = [...itemsPerDay(sim.truth(), 'feedback')].find(
      ([d, n]) => d <= addDays(TO, -8) && n > 60 && n < 100,
    )?.[0] as DayString;
    expect(day).toBeDefined();
    // What the run that met the new cap left: 60 of the day's items, settled whole at 60.
    await sql`delete from feedback where source_id = 'main' and ctid in (
      select ctid from feedback where source_id = 'main' and dt >= ${day}::date and dt < ${day}::date + 1
      order by dt offset 60)`.execute(t.db);
    await t.db
      .updateTable('sync_windows')
      .set({ uncapped_served: 60, served_count: 60, item_count: 60, truncated: false })
      .where('resource', '=', 'feedback')
      .where('day', '=', day)
      .execute();
    await sim.stop();
    sim = await startSimulator({ seed: SEED, from: FROM, to: TO, volume: VOLUME, caps: { feedback: 60 } });
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
  });

  it('short and unflagged before: the loss the deploy left', async () => {
    const found = await compareWithTruth(t, 'main', sim.truth(), { from: FROM, to: TO });
    expect(found.feedback.missedFlags).toContain(day);
  });

  it('the next night proves the cap and reopens the day; the night after reads it first and flags it', async () => {
    const next = await runAgainst(t, sim, { now: nightAfter(1), request: { trigger: 'sync' } });
    expect(next.status).toBe('ok');
    expect(next.windows.some((w) => w.day === day)).toBe(false);
    expect((await windowOf()).reopened_at).not.toBeNull();
    const after = await runAgainst(t, sim, { now: nightAfter(2), request: { trigger: 'sync' } });
    expect(after.status).toBe('ok');
    expect(after.windows.some((w) => w.resource === 'feedback' && w.day === day)).toBe(true);
    expect(await windowOf()).toMatchObject({ truncated: true, reopened_at: null });
    const found = await compareWithTruth(t, 'main', sim.truth(), { from: FROM, to: TO });
    expect(found.feedback.missedFlags).toEqual([]);
  });
});
