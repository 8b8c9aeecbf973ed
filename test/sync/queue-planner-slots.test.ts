import { describe, expect, it } from 'vitest';
import type { ApiClient } from '../../src/api/api-client.js';
import type { DayString } from '../../src/time/days.js';
import { useQueuedBackfills } from '../helpers/queue-requests.js';

/**
 * A queued run's planner asks its own requests of a source once the workers have run its windows:
 * the run's last proof (src/sync/queue-proof.ts) and the snapshots. It asks them under every one
 * of the source's queue slots (src/sync/queue-dispatch.ts, aroundSource), so a window of another
 * run on the same source (the run lock is let go once the jobs are queued) cannot add to them
 * beyond INSIGHTS_SOURCE_CONCURRENCY, and as many at once as that allows: its endpoints are
 * proved side by side, not one request after another.
 */

const TODAY = '2026-10-20' as DayString;
const RANGE = { from: '2026-10-01' as DayString, to: '2026-10-10' as DayString };

/** What the planner's requests saw: how many were in flight at once, and the source's free slots meanwhile. */
interface PlannerWatch {
  requests: number;
  inFlight: number;
  mostInFlight: number;
  freeSlots: number[];
}

describe("a queued run's planner asks its own requests under the source's slots", () => {
  const watch: PlannerWatch = { requests: 0, inFlight: 0, mostInFlight: 0, freeSlots: [] };

  /** The slots of the source no one holds right now, as a worker's SKIP LOCKED claim finds them. */
  async function freeSlots(): Promise<number> {
    const client = await scene.t.pool.connect();
    try {
      await client.query('begin');
      const { rows } = await client.query(
        `select slot from queue_slots where source_id = 's1' for update skip locked`,
      );
      return rows.length;
    } finally {
      await client.query('rollback');
      client.release();
    }
  }

  const watched = (client: ApiClient): ApiClient => ({
    ...client,
    async window(resource, query, context) {
      watch.requests += 1;
      watch.inFlight += 1;
      watch.mostInFlight = Math.max(watch.mostInFlight, watch.inFlight);
      try {
        watch.freeSlots.push(await freeSlots());
        return await client.window(resource, query, context);
      } finally {
        watch.inFlight -= 1;
      }
    },
  });

  // Requests long enough to overlap.
  const scene = useQueuedBackfills(
    { seed: 52, latencyMs: 30 },
    { sources: 1, range: RANGE, today: TODAY, plannerClient: watched },
  );

  it('holds every slot of the source while it asks, and asks as many at once as the slots allow', async () => {
    const { result } = await scene.queued.backfill(2);
    expect(result.status).toBe('ok');
    // The last proof asked: the day after each endpoint's stretch, a canary.
    expect(watch.requests).toBeGreaterThan(2);
    // No worker could have taken a slot of the source while the planner asked.
    expect(watch.freeSlots).toHaveLength(watch.requests);
    expect(Math.max(...watch.freeSlots)).toBe(0);
    // Three endpoints proved side by side, two at a time: the source's two slots.
    expect(watch.mostInFlight).toBe(2);
  });
});
