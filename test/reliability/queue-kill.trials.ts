import { mkdirSync, writeFileSync } from 'node:fs';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queueSchema } from '../../src/db/bookkeeping.js';
import { createRandom } from '../../src/simulator/random.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { addDays, daysFrom, todayUtc } from '../../src/time/days.js';
import { startCli } from '../helpers/cli.js';
import { compareWithTruth } from '../helpers/completeness-oracle.js';
import { createTestDatabase } from '../helpers/database.js';
import { jobTally, sourceKeys, startCluster } from '../helpers/queue-cluster.js';

/**
 * Guarantee 4: a `worker` killed with SIGKILL mid-window loses nothing. Each trial, on
 * a fresh warehouse: two workers and a `backfill --queue` planner; at a seeded point (after N
 * windows committed) one worker, chosen by the seed, is SIGKILLed; in half the trials a new
 * worker replaces it. The planner is never restarted: its run must end ok by itself, once the
 * dead worker's jobs have expired (INSIGHTS_QUEUE_EXPIRE_SECONDS=4, maintenance every second)
 * and another worker has taken them. Then:
 * - at the kill: every watermark is the end of the contiguous run of done days in the ledger;
 * - at the end: every window done, each job completed exactly once, the warehouse equal to the
 *   simulator's ground truth (nothing lost, nothing extra), the watermarks at the last day.
 */

const TRIALS = 10;
const SEED = 20_260_314;
const TODAY = todayUtc(new Date());
const FROM = addDays(TODAY, -20);
const TO = addDays(TODAY, -1);
const SOURCES = 2;
const WINDOWS = SOURCES * 3 * 20;

interface Trial {
  trial: number;
  killAfter: number;
  victim: number;
  replaced: boolean;
  committedAtKill: number;
  activeAtKill: number;
  retriedJobs: number;
  runMs: number;
}

describe(`SIGKILL of a worker mid-window, ${TRIALS} seeded trials, no re-run`, () => {
  let sim: Simulator;
  const trials: Trial[] = [];
  const random = createRandom(SEED);

  beforeAll(async () => {
    sim = await startSimulator({
      seed: 9,
      from: FROM,
      to: TO,
      latencyMs: 60,
      apiKeys: sourceKeys(SOURCES),
      volume: { feedbackPerDay: 4, surveyPerDay: 3, recordingsPerDay: 3, busyDayFeedback: 10 },
    });
  });
  afterAll(async () => {
    await sim.stop();
    mkdirSync('test-output/reliability', { recursive: true });
    writeFileSync('test-output/reliability/queue-kill-trials.json', `${JSON.stringify(trials, null, 2)}\n`);
  });

  for (let trial = 1; trial <= TRIALS; trial++) {
    it(`trial ${trial}`, async () => {
      const killAfter = random.int(4, WINDOWS - 30);
      const pick = random.int(0, 1);
      const replaced = random.next() < 0.5;
      const t = await createTestDatabase();
      const cluster = startCluster(t, sim, {
        sources: SOURCES,
        workers: 2,
        env: { INSIGHTS_QUEUE_EXPIRE_SECONDS: '4' },
      });
      try {
        const started = performance.now();
        const planner = startCli(['backfill', '--queue', '--from', FROM, '--to', TO], cluster.env);
        const committed = async () => {
          const row = await sql<{
            n: number;
          }>`select count(*)::int as n from sync_windows where status = 'done'`
            .execute(t.db)
            .catch(() => ({ rows: [{ n: 0 }] }));
          return row.rows[0]?.n ?? 0;
        };
        while ((await committed()) < killAfter) await new Promise((resolve) => setTimeout(resolve, 5));
        // Mid-window: the victim is a worker that holds a source's slot now (its slot connection
        // is named after its pid), the seeded choice among them when both do.
        const holders = async () => {
          const { rows } = await sql<{ pid: number }>`
            select distinct substring(application_name from 'pid=([0-9]+)')::int as pid from pg_stat_activity
             where application_name like 'insights-sync slot pid=%' and state = 'idle in transaction'`.execute(
            t.db,
          );
          return cluster.workers.flatMap((w, index) =>
            rows.some((r) => r.pid === w.child.pid) ? [index] : [],
          );
        };
        let holding = await holders();
        while (holding.length === 0) {
          await new Promise((resolve) => setTimeout(resolve, 2));
          holding = await holders();
        }
        const victim = holding[pick % holding.length] as number;
        const active = await sql<{ n: number }>`
          select count(*)::int as n from ${sql.id(queueSchema(t.schema), 'job')} where state = 'active'`.execute(
          t.db,
        );
        cluster.workers[victim]?.child.kill('SIGKILL');
        const killed = await cluster.workers[victim]?.done;
        expect(killed?.signal).toBe('SIGKILL');

        // At the kill: each watermark is exactly the end of the contiguous done prefix.
        const marks = await t.db.selectFrom('watermarks').selectAll().execute();
        const done = await t.db
          .selectFrom('sync_windows')
          .select(['source_id', 'resource', 'day'])
          .where('status', '=', 'done')
          .execute();
        for (const source of cluster.sources)
          for (const resource of ['feedback', 'survey', 'recordings']) {
            const doneDays = new Set(
              done.filter((w) => w.source_id === source && w.resource === resource).map((w) => w.day),
            );
            let prefixEnd: string | null = null;
            for (const day of daysFrom(FROM, TO)) {
              if (!doneDays.has(day)) break;
              prefixEnd = day;
            }
            const mark = marks.find((m) => m.source_id === source && m.resource === resource);
            expect(mark?.day ?? null, `${source}/${resource} watermark at the kill`).toBe(prefixEnd);
          }

        if (replaced) cluster.startWorker();
        const run = await planner.done;
        expect(run.code, run.stderr).toBe(0);

        const windows = await t.db.selectFrom('sync_windows').select('status').execute();
        expect(windows).toHaveLength(WINDOWS);
        expect(windows.every((w) => w.status === 'done')).toBe(true);
        const tally = await jobTally(t);
        expect(tally.byState).toEqual({ completed: WINDOWS });
        expect(tally.completedTwice).toEqual([]);
        for (const source of cluster.sources) {
          const compared = await compareWithTruth(t, source, sim.truth(), { from: FROM, to: TO });
          for (const [resource, c] of Object.entries(compared)) {
            expect(c.stored, `${source}/${resource}`).toBe(c.expected);
            expect(c.extra, `${source}/${resource}`).toBe(0);
            expect(c.misplaced, `${source}/${resource}`).toBe(0);
          }
        }
        const after = await t.db.selectFrom('watermarks').select('day').execute();
        expect(after.map((m) => m.day)).toEqual(Array(SOURCES * 3).fill(TO));
        const retried = await sql<{ n: number }>`
          select count(*)::int as n from ${sql.id(queueSchema(t.schema), 'job')} where retry_count > 0`.execute(
          t.db,
        );
        trials.push({
          trial,
          killAfter,
          victim,
          replaced,
          committedAtKill: done.length,
          activeAtKill: active.rows[0]?.n ?? 0,
          retriedJobs: retried.rows[0]?.n ?? 0,
          runMs: Math.round(performance.now() - started),
        });
      } finally {
        await cluster.stop();
        await t.drop();
      }
    }, 120_000);
  }

  it('the kills landed mid-window: jobs the dead worker held were taken again by another', () => {
    expect(trials).toHaveLength(TRIALS);
    const midWindow = trials.filter((t) => t.retriedJobs > 0);
    expect(midWindow.length).toBeGreaterThanOrEqual(TRIALS / 2);
  });
});
