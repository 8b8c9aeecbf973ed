import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { compareWithTruth } from '../helpers/completeness-oracle.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst, simulatorSource } from '../helpers/sync-harness.js';

// Two weeks of about 15 feedback items a day, two days of 45 to 49, and days of 15 to 20 around
// them; the server refuses a limit above 20 and instants: a day is read whole only by its own
// request, at a limit above its items.
const FROM = '2026-11-01';
const TO = '2026-11-14';
const NIGHT = new Date('2026-11-16T03:00:00.000Z');
const MAXIMUM = 20;

describe('a server maximum limit between two halvings of ours', () => {
  let t: TestDatabase;
  let sim: Simulator;

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({
      seed: 1,
      from: FROM,
      to: TO,
      maxLimit: MAXIMUM,
      volume: { feedbackPerDay: 15, surveyPerDay: 2, recordingsPerDay: 2, busyDayFeedback: 0 },
    });
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
  });

  it('every day it serves whole is stored whole: only days of 20 items or more are flagged', async () => {
    const result = await runAgainst(t, sim, {
      now: NIGHT,
      sources: [simulatorSource(sim, 'max20')],
      request: { trigger: 'backfill', range: { from: FROM, to: TO }, resources: ['feedback'] },
    });
    expect(result.windows.filter((w) => w.status === 'failed')).toEqual([]);
    const sizes = new Map<string, number>();
    for (const item of sim.truth().feedback)
      sizes.set(item.dt.slice(0, 10), (sizes.get(item.dt.slice(0, 10)) ?? 0) + 1);
    const full = [...sizes].filter(([, size]) => size >= MAXIMUM).map(([day]) => day);
    // The halving alone (1000 down to 31 refused, 15 taken) cut days of 16 to 20 items: some must be here.
    expect([...sizes.values()].filter((size) => size > 15 && size < MAXIMUM).length).toBeGreaterThan(0);
    const report = await compareWithTruth(t, 'max20', sim.truth(), { from: FROM, to: TO });
    expect(report.feedback.flagged).toEqual(full.sort());
    expect(report.feedback.missedFlags).toEqual([]);
    const reachable = [...sizes.values()].reduce((sum, size) => sum + Math.min(size, MAXIMUM), 0);
    expect(report.feedback.stored).toBe(reachable);
  });
});
