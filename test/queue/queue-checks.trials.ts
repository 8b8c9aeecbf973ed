import { describe, expect, it } from 'vitest';
import { WINDOWED_RESOURCES } from '../../src/schemas/resource-names.js';
import type { DayString } from '../../src/time/days.js';
import { spanDays, useQueuedBackfills } from '../helpers/queue-requests.js';

/**
 * The queue benchmark's backfill (bench/queue.ts: 8 sources, 30 days, the default data, a cap
 * above our limit; seeded, on fixed days) once the server is learned, its windows run by workers in process, without
 * latency: what it asks, by kind (test/helpers/queue-requests.ts). A queued run's checks of the
 * server are the run's (queue_run_checks): four workers ask them as often as one. When each
 * worker asked its own, four asked 104 cap checks and 93 reading checks of 720 windows, one
 * worker 32 and 24: 1.390 requests a window against 1.200. Now four ask 32 and 24, 1.189 a window.
 */

const TODAY = '2026-11-05' as DayString;
const RANGE = { from: '2026-10-01' as DayString, to: '2026-10-30' as DayString };
const SOURCES = 8;

describe("the queue benchmark's backfill, by request", () => {
  const scene = useQueuedBackfills(
    { seed: 41, cap: 10_000 },
    { sources: SOURCES, range: RANGE, today: TODAY },
  );

  it("four workers ask the run's checks no more often than one worker does, but for windows started side by side", async () => {
    expect((await scene.queued.backfill(1)).result.status).toBe('ok');
    const one = await scene.queued.backfill(1);
    const four = await scene.queued.backfill(4);
    const windows = SOURCES * WINDOWED_RESOURCES.length * spanDays(RANGE.from, RANGE.to);
    const total = (byKind: Record<string, number>) => Object.values(byKind).reduce((a, b) => a + b, 0);
    console.info(
      `requests by kind, ${windows} windows once learned: 1 worker ${JSON.stringify(one.tally.byKind)} (${(total(one.tally.byKind) / windows).toFixed(3)} a window), 4 workers ${JSON.stringify(four.tally.byKind)} (${(total(four.tally.byKind) / windows).toFixed(3)} a window)`,
    );
    expect(one.result.status).toBe('ok');
    expect(four.result.status).toBe('ok');
    const checks = (tally: typeof one.tally, kind: 'cap' | 'reading') =>
      [...tally.checks.values()].reduce((sum, c) => sum + c[kind], 0);
    // A few more at most, of windows another worker started side by side with a check.
    const slack = (SOURCES * WINDOWED_RESOURCES.length) / 4;
    expect(checks(four.tally, 'cap')).toBeLessThanOrEqual(checks(one.tally, 'cap') + slack);
    expect(checks(four.tally, 'reading')).toBeLessThanOrEqual(checks(one.tally, 'reading') + slack);
  }, 600_000);
});
