/**
 * SPEC-GAPS, "a reading that changes", between runs, as test/sync/reading-between-runs.test.ts and
 * test/sync/verify-reading-change.test.ts play it: a server capped at 100 whose days hold about
 * 20 to 100 items is backfilled over its 16 most recent days; restarted on the same data with an
 * exclusive end bound, it is asked for the 25 days before.
 */
import { afterAll, beforeAll } from 'vitest';
import type { Logger } from '../../src/log/logger.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import type { RunResult } from '../../src/sync/outcomes.js';
import { addDays } from '../../src/time/days.js';
import { createTestDatabase, type TestDatabase } from './database.js';
import { runAgainst } from './sync-harness.js';

export const TO = '2026-04-30';
export const RECENT = addDays(TO, -15);
export const OLDER_TO = addDays(RECENT, -1);
export const OLDER_FROM = addDays(OLDER_TO, -24);
export const NIGHT = new Date('2026-05-01T03:00:00.000Z');
/** About 20 to 100 items a day of each resource, under a cap of 100. */
const VOLUME = { feedbackPerDay: 55, surveyPerDay: 45, recordingsPerDay: 35, busyDayFeedback: 95 };

/** The capped server, with data from OLDER_FROM to TO, reading end bounds as it first does. */
export function startCappedSimulator(seed: number): Promise<Simulator> {
  return startSimulator({ seed, from: OLDER_FROM, to: TO, volume: VOLUME, cap: 100 });
}

export interface ReadingChangeScene {
  t: TestDatabase;
  sim: Simulator;
}

/** A warehouse and a capped server (seed 2039) for the calling describe block, gone after it. */
export function useReadingChangeScene(): ReadingChangeScene {
  const scene = {} as ReadingChangeScene;
  beforeAll(async () => {
    scene.t = await createTestDatabase();
    scene.sim = await startCappedSimulator(2039);
  });
  afterAll(async () => {
    await scene.sim?.stop();
    await scene.t?.drop();
  });
  return scene;
}

/** The recent days backfilled, the server restarted with an exclusive end bound, the older days backfilled. */
export async function backfillAcrossReadingChange(
  { t, sim }: ReadingChangeScene,
  options: { olderLogger?: Logger } = {},
): Promise<{ recent: RunResult; older: RunResult }> {
  const recent = await runAgainst(t, sim, {
    now: NIGHT,
    request: { trigger: 'backfill', range: { from: RECENT, to: TO } },
  });
  sim.setOptions({ enddate: 'exclusive' });
  const older = await runAgainst(t, sim, {
    now: NIGHT,
    ...(options.olderLogger === undefined ? {} : { logger: options.olderLogger }),
    request: { trigger: 'backfill', range: { from: OLDER_FROM, to: OLDER_TO } },
  });
  return { recent, older };
}
