/**
 * A day an earlier run stored more items of than the first limit holds is asked, the next time,
 * with a limit above them: once, not first with a limit its answer fills and then again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiClient, WindowQuery } from '../../src/api/api-client.js';
import type { Simulator } from '../../src/simulator/server.js';
import { BUSY, BUSY_NIGHT, BUSY_RANGE, learnedBusyDay } from '../helpers/busy-day.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst, TEST_SETTINGS } from '../helpers/sync-harness.js';

/** The client, recording every windowed request it sends. */
function recording(asked: { resource: string; query: WindowQuery }[]) {
  return (client: ApiClient): ApiClient => ({
    ...client,
    window: (resource, query, context) => {
      asked.push({ resource, query });
      return client.window(resource, query, context);
    },
  });
}

describe('the limit a day is first asked with, from what earlier runs stored of it', () => {
  let t: TestDatabase;
  let sim: Simulator;
  let busyDay: string;

  beforeAll(async () => {
    t = await createTestDatabase();
    ({ sim, busyDay } = await learnedBusyDay(t));
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
  });

  it('asks a day of 1,500 stored items above them at once when read again, and stores it whole', async () => {
    const asked: { resource: string; query: WindowQuery }[] = [];
    const again = await runAgainst(t, sim, {
      now: BUSY_NIGHT,
      request: { trigger: 'backfill', range: BUSY_RANGE },
      wrapClient: recording(asked),
    });
    expect(again.status).toBe('ok');
    const busyAlone = asked.filter(
      ({ resource, query }) =>
        resource === 'feedback' && query.startdate === busyDay && query.enddate === busyDay,
    );
    expect(busyAlone.length).toBeGreaterThan(0);
    // Above the first limit (1,000), and above the items stored: no answer cut at our limit.
    for (const { query } of busyAlone) expect(query.limit).toBeGreaterThan(BUSY);
    const { rows } = await t.pool.query<{ item_count: number; truncated: boolean }>(
      `select item_count, truncated from sync_windows where resource = 'feedback' and day = $1`,
      [busyDay],
    );
    expect(rows).toEqual([{ item_count: BUSY, truncated: false }]);
  });

  it('asks the days of a resource earlier runs stored few items of with the first limit', async () => {
    const asked: { resource: string; query: WindowQuery }[] = [];
    await runAgainst(t, sim, {
      now: BUSY_NIGHT,
      request: { trigger: 'backfill', range: BUSY_RANGE },
      wrapClient: recording(asked),
    });
    const survey = asked.filter(({ resource }) => resource === 'survey');
    expect(survey.length).toBeGreaterThan(0);
    // The days at the first limit, never above it; the run's proofs each below it, at a limit of
    // their own (reading-session.ts, proofLimit), a few requests of the run.
    for (const { query } of survey) expect(query.limit).toBeLessThanOrEqual(TEST_SETTINGS.limit);
    const proofs = survey.filter(({ query }) => query.limit < TEST_SETTINGS.limit);
    expect(proofs.length).toBeLessThan(survey.length / 4);
    expect(new Set(proofs.map(({ query }) => query.limit)).size).toBe(proofs.length);
  });
});
