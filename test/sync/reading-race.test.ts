/**
 * Every writer of a server reading stores over what it last read or stored, the in-process run
 * too. A queued run lets the run lock go while its workers work, so an in-process run may run
 * beside them: a worker that re-learns the reading (the server changed) stores it while the
 * in-process run goes on from the reading it read at its start. That run's end must not put
 * its older reading back over the worker's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiClient } from '../../src/api/api-client.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst } from '../helpers/sync-harness.js';

const FROM = '2026-03-01';
const TO = '2026-03-06';
const NIGHT = new Date('2026-03-08T03:00:00.000Z');
const HOUR = 3_600_000;

/** What the worker stored: learned again after the server changed (an exclusive startdate). */
const WORKERS = { head_ms: 24 * HOUR, tail_ms: 20 * HOUR, item_order: 'newest-first' as const };

describe('an in-process run beside a queued run whose worker re-learned the reading', () => {
  let t: TestDatabase;
  let sim: Simulator;

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 31, from: FROM, to: TO });
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
  });

  const stored = () =>
    t.db
      .selectFrom('server_readings')
      .select(['head_ms', 'tail_ms', 'item_order'])
      .where('source_id', '=', 'main')
      .where('resource', '=', 'feedback')
      .executeTakeFirstOrThrow();

  it('does not overwrite the reading the worker stored while it ran', async () => {
    const first = await runAgainst(t, sim, {
      now: NIGHT,
      request: { trigger: 'backfill', range: { from: FROM, to: TO } },
    });
    expect(first.status).toBe('ok');
    const learned = await stored();
    expect(learned.item_order).toBe('oldest-first');

    // The worker stores its reading once the in-process run has read the old one and asked its
    // first feedback window.
    let workerStored = false;
    const withWorker = (client: ApiClient): ApiClient => ({
      ...client,
      source: client.source,
      baseUrl: client.baseUrl,
      window: async (resource, query, context) => {
        const items = await client.window(resource, query, context);
        if (resource === 'feedback' && !workerStored) {
          workerStored = true;
          await t.db
            .updateTable('server_readings')
            .set(WORKERS)
            .where('source_id', '=', 'main')
            .where('resource', '=', 'feedback')
            .execute();
        }
        return items;
      },
    });
    const second = await runAgainst(t, sim, {
      now: NIGHT,
      request: { trigger: 'backfill', range: { from: FROM, to: TO } },
      wrapClient: withWorker,
    });
    expect(second.status).toBe('ok');
    expect(workerStored).toBe(true);
    expect(await stored()).toEqual(WORKERS);
  });
});
