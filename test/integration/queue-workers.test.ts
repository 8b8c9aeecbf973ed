import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { queueSchema } from '../../src/db/bookkeeping.js';
import { silentLogger } from '../../src/log/logger.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import {
  ensureWindowQueue,
  openQueue,
  sendWindowJobs,
  type WindowJob,
  windowQueueName,
} from '../../src/sync/window-queue.js';
import { addDays, todayUtc } from '../../src/time/days.js';
import { runCli } from '../helpers/cli.js';
import { compareWithTruth } from '../helpers/completeness-oracle.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { jobTally, sourceKeys, startCluster } from '../helpers/queue-cluster.js';

/**
 * Issue 14: windows as jobs on pg-boss, run by several `worker` processes (the dev CLI), planned
 * by `backfill --queue` and `sync --queue`. Against the simulator, several sources on one server,
 * each with its own key so the simulator counts each source's requests in flight.
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
        expect(backfill.stderr).not.toMatch(/"level":5\d/);
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
        const checks = await t.db.selectFrom('queue_run_checks').select(['source_id', 'resource']).execute();
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

describe('a 429 storm on one source', () => {
  it(
    'slows that source only: the other source finishes its windows while the stormed one is still retrying',
    async () => {
      const sim = await startSimulator({
        seed: 15,
        from: FROM,
        to: TODAY,
        latencyMs: 30,
        apiKeys: sourceKeys(2),
        // Six answers in ten are 429 with Retry-After, for source s1's key only.
        faultRate: 0.6,
        faults: ['429'],
        faultKeys: ['key-s1'],
        volume: { feedbackPerDay: 3, surveyPerDay: 2, recordingsPerDay: 2, busyDayFeedback: 6 },
      });
      const t = await createTestDatabase();
      const cluster = startCluster(t, sim, {
        sources: 2,
        workers: 2,
        env: { INSIGHTS_MAX_ATTEMPTS: '20', INSIGHTS_RETRY_AFTER_CAP_MS: '400' },
      });
      try {
        const backfill = await runCli(['backfill', '--queue', '--from', FROM, '--to', TO], cluster.env);
        expect(backfill.code).toBe(0);
        const spans = await sql<{ name: string; seconds: number }>`
          select name, extract(epoch from max(completed_on) - min(created_on))::float8 as seconds
            from ${sql.id(queueSchema(t.schema), 'job')} group by name order by name`.execute(t.db);
        const span = Object.fromEntries(spans.rows.map((r) => [r.name, r.seconds]));
        const stormed = span[windowQueueName('s1')] ?? 0;
        const calm = span[windowQueueName('s2')] ?? Number.POSITIVE_INFINITY;
        expect(sim.stats().byKey['key-s2']?.requests).toBeGreaterThan(0);
        expect(calm).toBeLessThan(stormed / 2);
        for (const source of cluster.sources) {
          const compared = await compareWithTruth(t, source, sim.truth(), { from: FROM, to: TO });
          for (const resource of Object.values(compared)) expect(resource.stored).toBe(resource.expected);
        }
      } finally {
        await cluster.stop();
        await t.drop();
        await sim.stop();
      }
    },
    PROCESS_TEST_MS,
  );
});

describe('priorities', () => {
  it("a sync's windows go ahead of a backfill's already queued; a backfill's run newest day first", async () => {
    const t = await createTestDatabase();
    const settings = {
      sourceConcurrency: 2,
      queueExpireSeconds: 60,
      queueMaintenanceSeconds: 60,
      queueRetryLimit: 1,
    };
    const boss = await openQueue(t.url, t.schema, settings, silentLogger());
    try {
      await ensureWindowQueue(boss, t.schema, 'main', settings);
      const job = (runId: number, day: string): WindowJob => ({
        runId,
        source: 'main',
        resource: 'feedback',
        day,
        startDay: '2026-01-01',
        today: '2026-02-01',
      });
      await sendWindowJobs(
        boss,
        'backfill',
        ['2026-01-01', '2026-01-02', '2026-01-03'].map((d) => job(1, d)),
        settings,
      );
      await sendWindowJobs(
        boss,
        'sync',
        ['2026-01-30', '2026-01-31'].map((d) => job(2, d)),
        settings,
      );
      // One at a time, as a worker's lane takes them (a batch comes back in no particular order).
      const fetched: WindowJob[] = [];
      for (let i = 0; i < 5; i++) {
        const [next] = await boss.fetch<WindowJob>(windowQueueName('main'));
        if (next) fetched.push(next.data);
      }
      expect(fetched.map((j) => `${j.runId} ${j.day}`)).toEqual([
        '2 2026-01-30',
        '2 2026-01-31',
        '1 2026-01-03',
        '1 2026-01-02',
        '1 2026-01-01',
      ]);
    } finally {
      await boss.stop({ graceful: false, wait: true, timeout: 1000 });
      await t.drop();
    }
  });
});
