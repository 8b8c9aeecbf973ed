/**
 * Whether a day is whole, where analysts query: day_completeness shows the ledger's state of every
 * source, windowed resource and UTC day to the analyst role, which cannot read the ledger itself,
 * and daily_activity carries each resource's status so a KPI keeps to complete days.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiClient } from '../../src/api/api-client.js';
import { bookkeepingSchema } from '../../src/db/bookkeeping.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { runAgainst, simulatorSource } from '../helpers/sync-harness.js';
import { createRolesDatabase, type RolesDatabase, SCHEMA } from '../reliability/warehouse-roles.js';

// Ten days of data; 2026-03-10 holds 1,500 feedback items behind a cap of 100 (truncated).
const FROM = '2026-03-01';
const TO = '2026-03-10';
const BUSY = '2026-03-10';
const FAILED = '2026-03-05';
const TODAY = '2026-03-13';
const NOW = new Date(`${TODAY}T12:00:00.000Z`);
const STATE = bookkeepingSchema(SCHEMA);

interface CompletenessRow {
  source_id: string;
  resource: string;
  day: string;
  status: string;
  items_stored: number | null;
  most_served: number | null;
  requested_limit: number | null;
  cap_learned: number | null;
  last_read_at: Date | null;
}

/** Fails every request for the feedback of one day: that day's window fails, the others load. */
function failingDay(client: ApiClient): ApiClient {
  return {
    ...client,
    window: (resource, query, context) =>
      resource === 'feedback' && context?.day === FAILED
        ? Promise.reject(new Error(`feedback of ${FAILED} refused for this test`))
        : client.window(resource, query, context),
  };
}

describe('day_completeness: the ledger as an analyst sees it', () => {
  let roles: RolesDatabase;
  let sim: Simulator;
  let analyst: pg.Client;
  let monitor: pg.Client;

  beforeAll(async () => {
    roles = await createRolesDatabase();
    sim = await startSimulator({ seed: 5, from: FROM, to: TO, cap: 100, order: 'newest-first' });
    const sync = roles.as('sync');
    const source = simulatorSource(sim);
    // The ten days of data, one of them failing; then today alone (open). 11 and 12 are never read.
    await runAgainst(sync, sim, {
      now: NOW,
      sources: [source],
      request: { trigger: 'backfill', range: { from: FROM, to: TO } },
      wrapClient: failingDay,
    });
    await runAgainst(sync, sim, {
      now: NOW,
      sources: [source],
      request: { trigger: 'backfill', range: { from: TODAY, to: TODAY } },
    });
    analyst = new pg.Client({ connectionString: roles.url.analyst });
    await analyst.connect();
    monitor = new pg.Client({ connectionString: roles.url.monitor });
    await monitor.connect();
  }, 120_000);
  afterAll(async () => {
    await analyst?.end();
    await monitor?.end();
    await sim?.stop();
    await roles?.drop();
  });

  const completeness = async (): Promise<CompletenessRow[]> =>
    (
      await analyst.query<CompletenessRow>(
        `select source_id, resource, day::text as day, status, items_stored, most_served, requested_limit,
                cap_learned, last_read_at
           from ${SCHEMA}.day_completeness order by source_id, resource, day`,
      )
    ).rows;

  it('lists every day from the first loaded through today with exactly the ledger state', async () => {
    const ledger = await monitor.query<{
      resource: string;
      day: string;
      status: string;
      truncated: boolean;
      item_count: number;
      served_count: number | null;
      requested_limit: number | null;
      fetched_at: Date;
    }>(
      `select resource, day::text as day, status, truncated, item_count, served_count, requested_limit, fetched_at
         from ${STATE}.sync_windows where source_id = 'main'`,
    );
    const readings = await monitor.query<{ resource: string; cap: number | null }>(
      `select resource, cap from ${STATE}.server_readings where source_id = 'main'`,
    );
    const capOf = new Map(readings.rows.map((r) => [r.resource, r.cap]));
    // The view runs to the database's today (UTC), after the runs' simulated clock.
    const clock = await analyst.query<{ today: string }>(
      `select ((now() at time zone 'UTC')::date)::text as today`,
    );
    const last = clock.rows[0]?.today ?? TODAY;
    const rows = await completeness();
    const expected: CompletenessRow[] = [];
    for (const resource of ['feedback', 'recordings', 'survey'])
      for (let d = Date.parse(FROM); d <= Math.max(Date.parse(TODAY), Date.parse(last)); d += 86_400_000) {
        const day = new Date(d).toISOString().slice(0, 10);
        const w = ledger.rows.find((r) => r.resource === resource && r.day === day);
        expected.push({
          source_id: 'main',
          resource,
          day,
          status:
            w === undefined
              ? 'not loaded'
              : w.status === 'done'
                ? w.truncated
                  ? 'truncated'
                  : 'complete'
                : w.status,
          items_stored: w?.item_count ?? null,
          most_served: w === undefined ? null : (w.served_count ?? w.item_count),
          requested_limit: w?.requested_limit ?? null,
          cap_learned: capOf.get(resource) ?? null,
          last_read_at: w?.fetched_at ?? null,
        });
      }
    expect(rows).toEqual(expected);
  });

  it('shows the truncated, the failed, the open and the unread days for what they are', async () => {
    const rows = await completeness();
    const feedback = (day: string) => rows.find((r) => r.resource === 'feedback' && r.day === day);
    expect(feedback(BUSY)).toMatchObject({
      status: 'truncated',
      items_stored: 100,
      most_served: 100,
      cap_learned: 100,
    });
    expect(feedback(FAILED)?.status).toBe('failed');
    for (const resource of ['feedback', 'survey', 'recordings']) {
      const of = (day: string) => rows.find((r) => r.resource === resource && r.day === day)?.status;
      expect([of('2026-03-11'), of('2026-03-12'), of(TODAY)], resource).toEqual([
        'not loaded',
        'not loaded',
        'open',
      ]);
    }
    expect(feedback('2026-03-01')?.status).toBe('complete');
  });

  it('daily_activity carries the status of each resource, so a KPI keeps to complete days', async () => {
    const { rows } = await analyst.query<{ day: string; feedback_day_status: string }>(
      `select day::text as day, feedback_day_status from ${SCHEMA}.daily_activity
        where source_id = 'main' order by day`,
    );
    const status = new Map(rows.map((r) => [r.day, r.feedback_day_status]));
    expect(status.get(BUSY)).toBe('truncated');
    expect(status.get('2026-03-01')).toBe('complete');
    const complete = await analyst.query<{ day: string }>(
      `select day::text as day from ${SCHEMA}.daily_activity
        where source_id = 'main' and feedback_day_status = 'complete' order by day`,
    );
    const days = complete.rows.map((r) => r.day);
    expect(days).not.toContain(BUSY);
    expect(days).not.toContain(FAILED);
    expect(days.length).toBeGreaterThan(5);
  });

  it('the analyst still reads nothing of the bookkeeping schema itself', async () => {
    for (const table of ['sync_windows', 'server_readings', 'watermarks', 'sync_runs'])
      await expect(analyst.query(`select 1 from ${STATE}.${table} limit 1`), table).rejects.toThrow(
        /permission denied/,
      );
  });
});
