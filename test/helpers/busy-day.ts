import { expect } from 'vitest';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import type { TestDatabase } from './database.js';
import { runAgainst } from './sync-harness.js';

/** The range the busy-day tests back-fill, and the night they run it. */
export const BUSY_RANGE = { from: '2026-03-01', to: '2026-03-16' } as const;
export const BUSY_NIGHT = new Date('2026-03-20T03:00:00.000Z');
/** The busy day's feedback items: more than the first limit (1,000) holds. */
export const BUSY = 1_500;

/**
 * A simulator with one busy day of feedback, served whole at a limit above it (no cap below the
 * client's ceiling), whose reading a first backfill of `BUSY_RANGE` learned and stored, as for
 * any later run. The caller stops the simulator.
 */
export async function learnedBusyDay(t: TestDatabase): Promise<{ sim: Simulator; busyDay: string }> {
  const sim = await startSimulator({
    seed: 5,
    from: BUSY_RANGE.from,
    to: BUSY_RANGE.to,
    cap: 10_000,
    volume: { busyDayFeedback: BUSY },
  });
  const first = await runAgainst(t, sim, {
    now: BUSY_NIGHT,
    request: { trigger: 'backfill', range: BUSY_RANGE },
  });
  expect(first.status).toBe('ok');
  return { sim, busyDay: sim.truth().meta.busyDay as string };
}
