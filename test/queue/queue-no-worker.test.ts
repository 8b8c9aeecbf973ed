import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { queueSchema } from '../../src/db/bookkeeping.js';
import { LATEST_MIGRATION } from '../../src/db/migrator.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { workerNotice } from '../../src/sync/queue-dispatch.js';
import { addDays, todayUtc } from '../../src/time/days.js';
import { cliEnv, startCli } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

/**
 * A queued run with no worker alive says so, and names the command that starts one; its jobs name
 * the planner's newest migration.
 */

const TODAY = todayUtc(new Date());
const FROM = addDays(TODAY, -3);
const TO = addDays(TODAY, -1);

describe('workerNotice', () => {
  it('speaks when the workers are first found gone, and when one is back; silent otherwise', () => {
    expect(workerNotice(0, false)).toBe('none');
    expect(workerNotice(0, true)).toBeUndefined();
    expect(workerNotice(2, true)).toBe('back');
    expect(workerNotice(1, false)).toBeUndefined();
  });
});

describe('a queued run with no worker', () => {
  let t: TestDatabase;
  let sim: Simulator;
  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 5, from: FROM, to: TO });
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
  });

  it('warns while it waits, naming `insights-sync worker`', async () => {
    const env = cliEnv({ DATABASE_URL: t.url, INSIGHTS_API_URL: sim.url, INSIGHTS_API_KEY: sim.apiKey });
    const planner = startCli(['backfill', '--queue', '--from', FROM, '--to', TO], env);
    let stderr = '';
    planner.child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    try {
      await vi.waitFor(() => expect(stderr).toContain('no live worker is taking the window jobs'), {
        timeout: 20_000,
        interval: 100,
      });
      expect(stderr).toContain('start one with `insights-sync worker`');
      // Each job names the newest migration its planner knew, for a worker to compare (window-queue.ts).
      const jobs = await sql<{ schema: string | null }>`
        select data->>'schema' as schema from ${sql.id(queueSchema(t.schema), 'job')}
         where name like 'windows.%'`.execute(t.db);
      expect(jobs.rows.length).toBeGreaterThan(0);
      expect(new Set(jobs.rows.map((r) => r.schema))).toEqual(new Set([LATEST_MIGRATION]));
    } finally {
      planner.child.kill('SIGINT');
      await planner.done;
    }
  });
});
