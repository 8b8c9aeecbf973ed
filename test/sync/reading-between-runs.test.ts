/**
 * SPEC-GAPS, "a reading that changes", between runs: a server capped at 100 whose days hold about
 * 20 to 100 items is backfilled over 16 days; restarted on the same data with an exclusive end
 * bound, it is asked for the 25 days before. Every item it serves must be stored, or its day
 * flagged; and the run must say the reading changed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WINDOWED_RESOURCES } from '../../src/schemas/resources.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { addDays } from '../../src/time/days.js';
import { captureLogger } from '../api/fixture-server.js';
import { compareWithTruth } from '../helpers/completeness-oracle.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst } from '../helpers/sync-harness.js';

const TO = '2026-04-30';
const RECENT = addDays(TO, -15);
const OLDER_TO = addDays(RECENT, -1);
const OLDER_FROM = addDays(OLDER_TO, -24);
const NIGHT = new Date('2026-05-01T03:00:00.000Z');
/** About 20 to 100 items a day of each resource, under a cap of 100. */
const VOLUME = { feedbackPerDay: 55, surveyPerDay: 45, recordingsPerDay: 35, busyDayFeedback: 95 };

describe('a capped server restarted with an exclusive end bound before a backfill of older days', () => {
  let t: TestDatabase;
  let sim: Simulator;

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 2039, from: OLDER_FROM, to: TO, volume: VOLUME, cap: 100 });
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
  });

  it('stores every item of the older days, or flags the day; and says the reading changed', async () => {
    const recent = await runAgainst(t, sim, {
      now: NIGHT,
      request: { trigger: 'backfill', range: { from: RECENT, to: TO } },
    });
    expect(recent.status).toBe('ok');
    sim.setOptions({ enddate: 'exclusive' });
    const { logger, lines } = captureLogger();
    const older = await runAgainst(t, sim, {
      now: NIGHT,
      logger,
      request: { trigger: 'backfill', range: { from: OLDER_FROM, to: OLDER_TO } },
    });
    expect(older.status).toBe('ok');
    const found = await compareWithTruth(t, 'main', sim.truth(), { from: OLDER_FROM, to: OLDER_TO });
    for (const resource of WINDOWED_RESOURCES) {
      expect(found[resource].missedFlags, `${resource}: days short but settled complete`).toEqual([]);
      expect(found[resource].stored, resource).toBeGreaterThan(0);
    }
    const said = lines.map((line) => JSON.parse(line) as { msg: string; resource?: string });
    const changed = new Set(
      said.filter((line) => line.msg === 'server reading changed').map((l) => l.resource),
    );
    expect([...changed].sort()).toEqual([...WINDOWED_RESOURCES].sort());
  });
});
