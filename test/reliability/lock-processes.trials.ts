import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acquireRunLock } from '../../src/db/run-lock.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { addDays, todayUtc } from '../../src/time/days.js';
import { cliEnv, startCli } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

// The CLI runs on the real clock.
const TODAY = todayUtc(new Date());
const FROM = addDays(TODAY, -10);
const TO = addDays(TODAY, -1);
const BACKFILL = ['backfill', '--from', FROM, '--to', TO, '--resources', 'feedback,survey,recordings'];

/** Runs and their triggers and statuses, oldest first. */
async function runs(t: TestDatabase) {
  return t.db
    .selectFrom('sync_runs')
    .select(['run_id', 'trigger', 'status', 'started_at', 'finished_at', 'error'])
    .orderBy('run_id')
    .execute();
}

describe('one run at a time per warehouse, across processes', () => {
  let t: TestDatabase;
  // One simulator per process: its request count says whether that process called the API.
  let simA: Simulator;
  let simB: Simulator;
  const envFor = (sim: Simulator, extra: Record<string, string> = {}) =>
    cliEnv({
      DATABASE_URL: t.url,
      INSIGHTS_API_URL: sim.url,
      INSIGHTS_API_KEY: sim.apiKey,
      INSIGHTS_SOURCE_NAME: 'main',
      INSIGHTS_CONCURRENCY: '2',
      ...extra,
    });

  beforeAll(async () => {
    t = await createTestDatabase();
    // Each test sets a latency, so that runs last long enough to overlap.
    simA = await startSimulator({ seed: 31, from: FROM, to: TODAY, cap: 4000 });
    simB = await startSimulator({ seed: 31, from: FROM, to: TODAY, cap: 4000 });
  });
  afterAll(async () => {
    await simA.stop();
    await simB.stop();
    await t.drop();
  });

  it('of two backfills started together, exactly one runs; the other exits 4 naming the holder, having made no API call', async () => {
    simA.resetStats();
    simB.resetStats();
    // Runs of about 4 s: longer than the gap between two CLI starts, even on a loaded machine.
    simA.setOptions({ latencyMs: 250 });
    simB.setOptions({ latencyMs: 250 });
    // No heap limit, so no child process (bin/launch.js): the pid the message names is the one started here.
    const a = startCli(BACKFILL, envFor(simA, { INSIGHTS_MAX_HEAP_MB: '0' }));
    const b = startCli(BACKFILL, envFor(simB, { INSIGHTS_MAX_HEAP_MB: '0' }));
    const results = await Promise.all([a.done, b.done]);
    const requests = [simA.stats().requests, simB.stats().requests];

    const winner = results.findIndex((r) => r.code === 0);
    const loser = 1 - winner;
    expect(results.map((r) => r.code).sort(), results.map((r) => r.stderr).join('\n')).toEqual([0, 4]);
    const winnerPid = [a, b][winner]?.child.pid;
    expect(results[loser]?.stderr.trim()).toMatch(
      new RegExp(
        `^insights-sync: another insights-sync run holds the lock on schema insights \\(pid ${winnerPid} on host \\S+, database user postgres, since \\S+Z\\); rerun with --wait to queue$`,
      ),
    );
    expect(requests[loser]).toBe(0);
    expect(requests[winner]).toBeGreaterThan(30);
    expect((await runs(t)).map((r) => [r.trigger, r.status])).toEqual([['backfill', 'ok']]);
  });

  it('a --wait run queues behind the holder; killing the holder frees the lock, and the killed run is marked interrupted', async () => {
    await sql`truncate sync_windows, watermarks, feedback, survey_answers, recordings`.execute(t.db);
    simB.resetStats();
    // A slow holder: the waiter has time to start and queue; then the waiter's own run is quick.
    simA.setOptions({ latencyMs: 400 });
    simB.setOptions({ latencyMs: 50 });
    const holder = startCli(BACKFILL, envFor(simA));
    await expect
      .poll(async () => (await runs(t)).filter((r) => r.status === 'running').length, {
        timeout: 15_000,
        interval: 50,
      })
      .toBe(1);
    const waiter = startCli([...BACKFILL, '--wait'], envFor(simB));
    let stderr = '';
    waiter.child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    await expect.poll(() => stderr, { timeout: 15_000, interval: 50 }).toContain('waiting for it (--wait)');
    expect(simB.stats().requests).toBe(0);

    holder.child.kill('SIGKILL');
    expect((await holder.done).signal).toBe('SIGKILL');
    const waited = await waiter.done;
    expect(waited.code, waited.stderr).toBe(0);
    expect(simB.stats().requests).toBeGreaterThan(30);

    const [killed, queued] = (await runs(t)).slice(-2);
    expect(killed).toMatchObject({ trigger: 'backfill', status: 'interrupted' });
    expect(killed?.error).toMatch(/ended without recording the end/);
    expect(queued).toMatchObject({ trigger: 'backfill', status: 'ok' });
  });

  it('the scheduler skips a slot while another process holds the lock, and a tick during its own run; SIGTERM stops it', async () => {
    simB.resetStats();
    // Runs of a few seconds: ticks every second come during them.
    simB.setOptions({ latencyMs: 400 });
    const held = await acquireRunLock({ url: t.url, schema: 'insights' });
    // Every second, so slots come while the lock is held and while the scheduler's own run goes on.
    const scheduler = startCli(['schedule', '--run-now'], envFor(simB, { INSIGHTS_SCHEDULE: '* * * * * *' }));
    let stderr = '';
    scheduler.child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    try {
      await expect
        .poll(() => stderr, { timeout: 15_000, interval: 50 })
        .toMatch(
          /another insights-sync run holds the lock on schema insights \(pid \d+ .*\); this slot is skipped/,
        );
      expect(simB.stats().requests).toBe(0);
    } finally {
      await held.release();
    }
    await expect
      .poll(async () => (await runs(t)).filter((r) => r.trigger === 'schedule' && r.status === 'ok').length, {
        timeout: 20_000,
        interval: 100,
      })
      .toBeGreaterThanOrEqual(1);
    expect(stderr).toContain('tick skipped: the previous run is still in progress');

    const signalled = Date.now();
    scheduler.child.kill('SIGTERM');
    const result = await scheduler.done;
    expect(result.code, result.stderr).toBe(0);
    expect(Date.now() - signalled).toBeLessThan(10_000);
    expect(result.stdout).toContain('nightly-sync: stopped.');

    // One at a time: no two scheduled runs overlap.
    const scheduled = (await runs(t)).filter((r) => r.trigger === 'schedule');
    for (let i = 1; i < scheduled.length; i++) {
      const before = scheduled[i - 1];
      const after = scheduled[i];
      expect(before?.finished_at?.getTime()).toBeLessThanOrEqual(after?.started_at.getTime() ?? 0);
    }
    expect(scheduled.every((r) => r.status === 'ok' || r.status === 'interrupted')).toBe(true);
  });
});
