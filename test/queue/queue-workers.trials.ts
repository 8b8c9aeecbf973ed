import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { addDays, todayUtc } from '../../src/time/days.js';
import { runCli } from '../helpers/cli.js';
import { compareWithTruth } from '../helpers/completeness-oracle.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { jobTally, sourceKeys, startCluster } from '../helpers/queue-cluster.js';

/**
 * Windows as jobs on pg-boss, run by several `worker` processes (the CLI), planned by
 * `backfill --queue` and `sync --queue`. Against the simulator, several sources on one server,
 * each with its own key so the simulator counts each source's requests in flight. A trial of
 * `npm run test:reliability`: processes over a minute or more.
 */

const TODAY = todayUtc(new Date());
const FROM = addDays(TODAY, -12);
const TO = addDays(TODAY, -1);
const DAYS = 12;
/** Process tests: tsx starts each CLI in 1-3 s, several at once on 2 shared CPUs. */
const PROCESS_TEST_MS = 120_000;

describe('sync and backfill through the queue, with several worker processes', () => {
  let sim: Simulator;
  let t: TestDatabase;

  beforeAll(async () => {
    sim = await startSimulator({
      seed: 14,
      from: FROM,
      to: TODAY,
      // Requests that last long enough to overlap: an unbounded worker would show more than 2 in flight.
      latencyMs: 40,
      apiKeys: sourceKeys(4),
      volume: { feedbackPerDay: 4, surveyPerDay: 3, recordingsPerDay: 3, busyDayFeedback: 12 },
    });
    t = await createTestDatabase();
  });
  afterAll(async () => {
    await t.drop();
    await sim.stop();
  });

  it(
    'every window is done exactly once, the warehouse equals the truth, and no source ever has more than its 2 in flight',
    async () => {
      const cluster = startCluster(t, sim, { sources: 4, workers: 3 });
      try {
        const backfill = await runCli(['backfill', '--queue', '--from', FROM, '--to', TO], cluster.env);
        expect(backfill.stderr).not.toMatch(/"level":"(error|fatal)"/);
        expect(backfill.code).toBe(0);
        // The same summary as in process: a table per source and resource.
        for (const source of cluster.sources) expect(backfill.stdout).toContain(source);

        const windows = await t.db.selectFrom('sync_windows').select(['status', 'attempts']).execute();
        expect(windows).toHaveLength(4 * 3 * DAYS);
        expect(windows.every((w) => w.status === 'done' && w.attempts === 1)).toBe(true);
        const tally = await jobTally(t);
        expect(tally.byState).toEqual({ completed: 4 * 3 * DAYS });
        expect(tally.completedTwice).toEqual([]);

        for (const source of cluster.sources) {
          const compared = await compareWithTruth(t, source, sim.truth(), { from: FROM, to: TO });
          for (const resource of Object.values(compared)) {
            expect(resource.stored).toBe(resource.expected);
            expect(resource.extra).toBe(0);
          }
          const mark = await t.db
            .selectFrom('watermarks')
            .select('day')
            .where('source_id', '=', source)
            .execute();
          expect(mark.map((m) => m.day)).toEqual([TO, TO, TO]);
        }
        // Each source and resource had its stored reading checked once for the run, shared by the workers.
        const checks = await t.db
          .selectFrom('queue_run_checks')
          .select(['source_id', 'resource'])
          .where('checked', '=', true)
          .execute();
        expect(checks).toHaveLength(4 * 3);
        const byKey = sim.stats().byKey;
        const most = sourceKeys(4).map((key) => byKey[key]?.maxInFlight ?? 0);
        expect(Math.max(...most)).toBe(2);
        // Several workers did the work (their counts come with the next heartbeat, every 5 s).
        const workers = await vi.waitFor(
          async () => {
            const rows = await t.db.selectFrom('queue_workers').select('windows_done').execute();
            expect(rows.reduce((sum, w) => sum + w.windows_done, 0)).toBe(4 * 3 * DAYS);
            return rows;
          },
          { timeout: 15_000, interval: 500 },
        );
        expect(workers).toHaveLength(3);
        expect(workers.filter((w) => w.windows_done > 0).length).toBeGreaterThan(1);

        // A nightly sync through the queue: the lookback days and today, then exit 0.
        const sync = await runCli(['sync', '--queue'], cluster.env);
        expect(sync.code).toBe(0);
        const status = await runCli(['status', '--json'], cluster.env);
        const report = JSON.parse(status.stdout) as {
          queue: {
            workersAlive: number;
            sources: { source: string; completed: number; failed: number; queued: number }[];
          } | null;
        };
        expect(report.queue?.workersAlive).toBe(3);
        expect(report.queue?.sources.map((s) => s.source).sort()).toEqual(cluster.sources);
        expect(report.queue?.sources.every((s) => s.completed > 0 && s.failed === 0 && s.queued === 0)).toBe(
          true,
        );
        const text = await runCli(['status'], cluster.env);
        expect(text.stdout).toMatch(/queue: 3 worker\(s\) alive, [\d.]+ windows per minute/);
        expect(text.stdout).toContain('window jobs:');
      } finally {
        const stopped = await cluster.stop();
        expect(stopped.map((r) => r.code)).toEqual([0, 0, 0]);
      }
    },
    PROCESS_TEST_MS,
  );
});
