import { describe, expect, it } from 'vitest';
import type { ApiClient } from '../../src/api/api-client.js';
import type { DayString } from '../../src/time/days.js';
import { interceptQueries } from '../helpers/query-spy.js';
import { useQueuedBackfills } from '../helpers/queue-requests.js';

/**
 * A queued run reads the days its workers reopened again, pass after pass, each closed by the
 * planner's last proof (run-sync.ts). A later pass proves only the sources whose days it read
 * again: another source's ledger rows are as the pass before proved them, and proved again they
 * would ask the same days after and canaries, and settle nothing new (the queue benchmark's
 * second pass asked 48 such requests of 720 windows).
 */

const TODAY = '2026-10-20' as DayString;
const RANGE = { from: '2026-10-05' as DayString, to: '2026-10-12' as DayString };
/** The day of s1's feedback a worker reopens, as the first pass's proof ends (below). */
const REOPENED = '2026-10-08';

describe("a queued run's passes over reopened days", () => {
  /** The planner's requests by source, by how many times it had looked for reopened days. */
  const asked = new Map<string, number[]>();
  let looks = 0;
  const counted = (client: ApiClient): ApiClient => ({
    ...client,
    window(resource, query, context) {
      const bySource = asked.get(client.source) ?? [];
      bySource[looks] = (bySource[looks] ?? 0) + 1;
      asked.set(client.source, bySource);
      return client.window(resource, query, context);
    },
  });
  const scene = useQueuedBackfills(
    { seed: 61 },
    { sources: 2, range: RANGE, today: TODAY, plannerClient: counted },
  );

  it('prove again only the sources whose days they read again', async () => {
    // The server learned and stored, as a later backfill finds it.
    expect((await scene.queued.backfill(1)).result.status).toBe('ok');
    asked.clear();
    // As the planner first looks for days its workers reopened, one of s1's is (a worker's
    // verdict, landed just after the first pass's proof): it is read again, and s1 proved again.
    interceptQueries(scene.t.pool, (args, query, client) => {
      const first = args[0] as string | { text?: string } | undefined;
      const text = typeof first === 'string' ? first : (first?.text ?? '');
      if (!text.includes('w.reopened_at is not null')) return query(...args);
      looks += 1;
      if (looks > 1) return query(...args);
      return client
        .query(
          `update sync_windows set reopened_at = now()
            where source_id = 's1' and resource = 'feedback' and day = $1`,
          [REOPENED],
        )
        .then(() => query(...args));
    });
    const { result } = await scene.queued.backfill(2);
    expect(result.status).toBe('ok');
    expect(looks).toBe(2);
    // Both proved by the first pass; s1 alone by the second, which read its day again.
    expect(asked.get('s1')?.[0] ?? 0).toBeGreaterThan(0);
    expect(asked.get('s2')?.[0] ?? 0).toBeGreaterThan(0);
    expect(asked.get('s1')?.[1] ?? 0).toBeGreaterThan(0);
    expect(asked.get('s2')?.[1] ?? 0).toBe(0);
  }, 120_000);
});
