import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { addDays } from '../../src/time/days.js';
import { type CliResult, startCli } from '../helpers/cli.js';
import { compareWithTruth, reopenedDays } from '../helpers/completeness-oracle.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { sourceKeys, startCluster } from '../helpers/queue-cluster.js';

/**
 * SPEC-GAPS, "a reading that changes", on the queue path, after a worker's last proof: a worker
 * proves the stretches of days it completes, so the last days it settles stand unproved when the
 * jobs run out. The service is deployed as the one worker reads the last of ten days: its day
 * moves to UTC-5, and that day is answered short (its first five hours missing) with nothing in
 * the run to show it. The planner's last proof (src/sync/queue-proof.ts) asks a day already proved
 * whole again, finds it short, tells the worker, and the run reads the unproved days again under
 * the reading learned anew. Without it, the last day stayed settled short.
 */

/** A fixed calendar in the past, so the data is the same every day the trial runs. */
const TODAY = '2026-11-20';
const FROM = addDays(TODAY, -10);
const TO = addDays(TODAY, -1);
const DAYS = 10;
const PROCESS_TEST_MS = 150_000;

/** Feedback days settled in the ledger. */
async function daysDone(t: TestDatabase): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    select count(*)::int as n from sync_windows where resource = 'feedback' and status = 'done'`.execute(
    t.db,
  );
  return rows[0]?.n ?? 0;
}

describe('a queued backfill whose server is deployed as its worker reads the last day', () => {
  let t: TestDatabase;
  let sim: Simulator;
  let backfill: CliResult;
  let workers: CliResult[];
  let deployedAt = -1;

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({
      seed: 6262,
      from: FROM,
      to: TODAY,
      apiKeys: sourceKeys(1),
      // Days finish at least one answer apart: the watch below sees the ninth before the tenth.
      latencyMs: 150,
      volume: { feedbackPerDay: 60, surveyPerDay: 0, recordingsPerDay: 0, busyDayFeedback: 60 },
    });
    const cluster = startCluster(t, sim, {
      sources: 1,
      workers: 1,
      env: { INSIGHTS_WORKER_CONCURRENCY: '1', INSIGHTS_SOURCE_CONCURRENCY: '1' },
    });
    let watching = true;
    const watch = (async () => {
      while (watching) {
        const done = await daysDone(t);
        if (done >= DAYS - 1) {
          sim.setOptions({ dayOffsetMinutes: -300 });
          deployedAt = done;
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    })();
    try {
      const planner = startCli(
        ['backfill', '--queue', '--from', FROM, '--to', TO, '--resources', 'feedback'],
        cluster.env,
      );
      backfill = await planner.done;
    } finally {
      watching = false;
      await watch;
      workers = await cluster.stop();
    }
  }, PROCESS_TEST_MS);

  afterAll(async () => {
    await sim?.stop();
    await t?.drop();
  });

  it('the run ends ok, and the deploy came before its last day', () => {
    expect(backfill.code, backfill.stderr).toBe(0);
    expect(workers.map((w) => w.code)).toEqual([0]);
    expect(deployedAt).toBe(DAYS - 1);
  });

  it('no day is settled short: every day not flagged holds every item the server holds', async () => {
    const found = await compareWithTruth(t, 's1', sim.truth(), { from: FROM, to: TO });
    expect(found.feedback.missedFlags, 'feedback: short but settled complete').toEqual([]);
  });

  it('leaves no day reopened or unproved: the planner proved the last days, or read them again', async () => {
    expect(await reopenedDays(t)).toEqual([]);
    const { rows } = await sql<{ day: string }>`
      select day::text as day from sync_windows where resource = 'feedback' and proved_at is null`.execute(
      t.db,
    );
    expect(rows).toEqual([]);
  });
});
