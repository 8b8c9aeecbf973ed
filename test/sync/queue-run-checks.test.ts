import { describe, expect, it } from 'vitest';
import { WINDOWED_RESOURCES } from '../../src/schemas/resource-names.js';
import type { DayString } from '../../src/time/days.js';
import { interceptQueries } from '../helpers/query-spy.js';
import { spanDays, useQueuedBackfills } from '../helpers/queue-requests.js';

/**
 * A queued run's checks of the source's server are the run's, not each worker's: whether the
 * stored reading still holds and whether the source is quiet (reading-check.ts, quiet-mode.ts),
 * and the largest answer the run has seen, below which no answer needs a week-wide request to
 * tell it from a silent cap's cut (day-plan.ts, cappedAt). Workers of one run share them through
 * queue_run_checks, so four workers ask them as often as one does (requests told apart by kind:
 * test/helpers/queue-requests.ts). The queue benchmark's shape, 720 windows, in
 * test/queue/queue-checks.trials.ts.
 */

const TODAY = '2026-10-20' as DayString;
const RANGE = { from: '2026-10-01' as DayString, to: '2026-10-12' as DayString };
const SOURCES = 2;

describe("a queued run's checks of the server", () => {
  // The busy day within our limit: a check whose widest answer a busy day cut is asked again on
  // later days (reading-check.ts, MAX_CUT_CHECKS), by each worker; the trial has one.
  const scene = useQueuedBackfills(
    { seed: 41, cap: 10_000, volume: { busyDayFeedback: 20 } },
    { sources: SOURCES, range: RANGE, today: TODAY },
  );

  it('four workers ask the run its checks once per source and resource, as one worker does, not once each', async () => {
    // The server learned and stored, as a later backfill finds it.
    expect((await scene.queued.backfill(1)).result.status).toBe('ok');
    const one = await scene.queued.backfill(1);
    const four = await scene.queued.backfill(4);
    const windows = SOURCES * WINDOWED_RESOURCES.length * spanDays(RANGE.from, RANGE.to);
    console.info(
      `requests by kind, ${windows} windows once learned: 1 worker ${JSON.stringify(one.tally.byKind)}, 4 workers ${JSON.stringify(four.tally.byKind)}`,
    );
    expect(one.result.status).toBe('ok');
    expect(four.result.status).toBe('ok');
    for (const { name } of scene.queued.sources)
      for (const resource of WINDOWED_RESOURCES) {
        const key = `${name}/${resource}`;
        const [alone, shared] = [one.tally.checks.get(key), four.tally.checks.get(key)];
        // One more at most: a window another worker started side by side with the first check.
        // Each worker asked its own before (four workers: 23 or 24 cap checks and 22 or 23
        // reading checks of these 6 sources and resources, one worker 6 and 6).
        expect(shared?.cap ?? 0, key).toBeLessThanOrEqual((alone?.cap ?? 0) + 1);
        expect(shared?.reading ?? 0, key).toBeLessThanOrEqual((alone?.reading ?? 0) + 1);
      }
  }, 120_000);

  it("four workers of a run store the source's reading only where it tells the row something new", async () => {
    // Each worker learns the largest answer again from none, and each first answer changes its
    // reading; the row, as the slot's release reads it back, holds it already.
    let stores = 0;
    interceptQueries(scene.t.pool, (args, query) => {
      const first = args[0] as string | { text?: string } | undefined;
      const text = typeof first === 'string' ? first : (first?.text ?? '');
      if (/^insert into "server_readings"/.test(text)) stores += 1;
      return query(...args);
    });
    const four = await scene.queued.backfill(4);
    expect(four.result.status).toBe('ok');
    const windows = SOURCES * WINDOWED_RESOURCES.length * spanDays(RANGE.from, RANGE.to);
    console.info(`server reading stores of ${windows} windows once learned, 4 workers: ${stores}`);
    expect(stores).toBeLessThanOrEqual(SOURCES * WINDOWED_RESOURCES.length);
  }, 120_000);
});
