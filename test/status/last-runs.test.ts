import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderStatus } from '../../src/cli/status.js';
import { startSimulator } from '../../src/simulator/server.js';
import { statusReport } from '../../src/status/status-report.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst, simulatorSource } from '../helpers/sync-harness.js';

describe('status: the last runs', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(() => t.drop());

  it('show when each started in UTC to the second, and a failed run says why under the table', async () => {
    const sim = await startSimulator({ seed: 3, from: '2026-03-09', to: '2026-03-10' });
    await runAgainst(t, sim, {
      now: new Date('2026-03-11T03:00:00.000Z'),
      sources: [simulatorSource(sim, 'shop')],
      request: { trigger: 'backfill', range: { from: '2026-03-09', to: '2026-03-10' } },
    }).finally(() => sim.stop());
    const error =
      'database unavailable: connection refused at 127.0.0.1:5432; start PostgreSQL, then run again';
    await t.db
      .insertInto('sync_runs')
      .values([
        {
          trigger: 'sync',
          status: 'ok',
          started_at: new Date('2026-03-11T03:00:07.250Z'),
          finished_at: new Date('2026-03-11T03:00:09.750Z'),
        },
        {
          trigger: 'sync',
          status: 'failed',
          started_at: new Date('2026-03-12T03:00:05.125Z'),
          finished_at: new Date('2026-03-12T03:00:06.125Z'),
          error,
        },
      ])
      .execute();

    const screen = renderStatus(await statusReport(t.db, '2026-03-12'));
    const runs = screen.slice(screen.indexOf('last runs:\n'));
    const [, header, newest, older, , why] = runs.split('\n');

    expect(header).toMatch(/^run +trigger +status +started \(UTC\) +duration +windows/);
    expect(header).not.toContain('error');
    expect(newest).toMatch(/^ +3 +sync +failed +2026-03-12 03:00:05 +1\.0 s/);
    expect(older).toMatch(/^ +2 +sync +ok +2026-03-11 03:00:07 +2\.5 s/);
    // The error's sentence widens no row of the table.
    expect(why).toBe(`  run 3: ${error}`);
    expect(Math.max(newest?.length ?? 0, older?.length ?? 0)).toBeLessThanOrEqual(header?.length ?? 0);
  });

  it('count the windows run (failed ones among them) and those not run, which add up to all it planned', async () => {
    const counts = { fetched: 0, inserted: 0, updated: 0, unchanged: 0, rejected: 0, truncatedDays: [] };
    const summary = {
      shop: {
        feedback: { windows: 81, failedWindows: 2, skippedWindows: 60, ...counts },
        recordings: { windows: 0, failedWindows: 0, skippedWindows: 0, ...counts },
      },
    };
    await t.db
      .insertInto('sync_runs')
      .values({
        trigger: 'backfill',
        status: 'interrupted',
        started_at: new Date('2026-03-12T04:00:00.000Z'),
        finished_at: new Date('2026-03-12T04:00:30.000Z'),
        summary: JSON.stringify(summary),
        error: 'interrupted before every window ran',
      })
      .execute();
    const screen = renderStatus(await statusReport(t.db, '2026-03-12', 1));
    const runs = screen.slice(screen.indexOf('last runs:\n'));
    const [, header, newest] = runs.split('\n');
    expect(header).toMatch(/duration +windows run +failed +not run +fetched/);
    // 81 planned: 21 run (2 of them failed), 60 not run.
    expect(newest).toMatch(/ 30\.0 s +21 +2 +60 +0 /);
  });
});
