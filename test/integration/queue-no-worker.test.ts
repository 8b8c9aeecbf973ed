import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { workerNotice } from '../../src/sync/queue-dispatch.js';
import { addDays, todayUtc } from '../../src/time/days.js';
import { cliEnv, startCli } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

/** A queued run with no worker alive says so, and names the command that starts one. */

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
    } finally {
      planner.child.kill('SIGINT');
      await planner.done;
    }
  });
});
