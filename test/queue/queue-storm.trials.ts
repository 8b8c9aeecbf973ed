import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { queueSchema } from '../../src/db/bookkeeping.js';
import { windowQueueName } from '../../src/queue/window-queue.js';
import { startSimulator } from '../../src/simulator/server.js';
import { addDays, todayUtc } from '../../src/time/days.js';
import { runCli } from '../helpers/cli.js';
import { compareWithTruth } from '../helpers/completeness-oracle.js';
import { createTestDatabase } from '../helpers/database.js';
import { sourceKeys, startCluster } from '../helpers/queue-cluster.js';

/**
 * Worker processes share the sources fairly: one source's 429 storm slows that source only. A trial
 * of `npm run test:reliability` (worker processes over a minute), beside queue-workers.trials.ts.
 */

const TODAY = todayUtc(new Date());
const FROM = addDays(TODAY, -12);
const TO = addDays(TODAY, -1);
/** Process tests: tsx starts each CLI in 1-3 s, several at once on 2 shared CPUs. */
const PROCESS_TEST_MS = 120_000;

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
