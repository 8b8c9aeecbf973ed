/**
 * The schedule's night: the sync first, then the scrub in what its budget leaves. Counted at the
 * simulator, a night never makes more requests than the budget, and night after night (a fake
 * clock, no waiting) every day of a 90-day warehouse is verified within the period the budget
 * states (src/ledger/scrub-plan.ts).
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scrubPeriodNights } from '../../src/ledger/scrub-plan.js';
import { silentLogger } from '../../src/log/logger.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { type NightResult, requestsOf, runNight } from '../../src/sync/scrub.js';
import { addDays } from '../../src/time/days.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst } from '../helpers/sync-harness.js';

const FROM = '2026-01-01';
const TO = '2026-03-31';
/** The first night after which every day of the range is beyond the sync's lookback. */
const FIRST_NIGHT = new Date('2026-04-04T03:00:00.000Z');
const BUDGET = 200;
const LOOKBACK = 3;
const VOLUME = { feedbackPerDay: 8, surveyPerDay: 6, recordingsPerDay: 5, busyDayFeedback: 8 };

describe('the nightly scrub', () => {
  let t: TestDatabase;
  let sim: Simulator;
  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 90, from: FROM, to: TO, volume: VOLUME });
    const loaded = await runAgainst(t, sim, {
      now: FIRST_NIGHT,
      request: { trigger: 'backfill', range: { from: FROM, to: TO } },
    });
    expect(loaded.status).toBe('ok');
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
  });

  const night = async (n: number): Promise<{ result: NightResult; requests: number; order: string[] }> => {
    const now = new Date(FIRST_NIGHT.getTime() + n * 86_400_000);
    const order: string[] = [];
    sim.resetStats();
    const result = await runNight({
      db: t.db,
      sync: () => {
        order.push('sync');
        return runAgainst(t, sim, { now, settings: { lookbackDays: LOOKBACK } });
      },
      run: (request, onWindow) => {
        order.push('verify');
        return runAgainst(t, sim, { now, request, onWindow, settings: { lookbackDays: LOOKBACK } });
      },
      budget: BUDGET,
      sources: ['main'],
      lookbackDays: LOOKBACK,
      now: () => now,
      logger: silentLogger(),
    });
    return { result, requests: sim.stats().requests, order };
  };

  const unverified = async () => {
    const { rows } = await sql<{ n: number }>`
      select count(*)::int as n from sync_windows where day between ${FROM} and ${TO} and last_verified_at is null`.execute(
      t.db,
    );
    return rows[0]?.n ?? -1;
  };

  it('verifies every day of 90 within the stated period, the sync first, never above the budget', async () => {
    const windows = 90 * 3;
    expect(await unverified()).toBe(windows);
    const nights: { requests: number; sync: number; scrubbed: number }[] = [];
    for (let n = 0; n < 10 && (await unverified()) > 0; n++) {
      const { result, requests, order } = await night(n);
      expect(order[0]).toBe('sync');
      expect(result.sync.status).toBe('ok');
      expect(requests, `night ${n}`).toBeLessThanOrEqual(BUDGET);
      nights.push({ requests, sync: requestsOf(result.sync, 'main'), scrubbed: result.scrubbed.length });
    }
    expect(await unverified()).toBe(0);
    const syncMost = Math.max(...nights.map((x) => x.sync));
    const stated = scrubPeriodNights(windows, BUDGET, syncMost, 3);
    expect(stated).not.toBeNull();
    expect(nights.length).toBeLessThanOrEqual(stated ?? 0);
    // Least recently verified first: no window it leaves was verified before one it takes.
    const before = await t.db
      .selectFrom('sync_windows')
      .select(['resource', sql<string>`day::text`.as('day'), 'last_verified_at'])
      .where('day', '<=', TO)
      .execute();
    const next = await night(nights.length);
    const taken = new Set(next.result.scrubbed.map((c) => `${c.resource} ${c.day}`));
    const when = (rows: typeof before) => rows.map((r) => r.last_verified_at?.getTime() ?? 0);
    expect(taken.size).toBeGreaterThan(0);
    expect(Math.max(...when(before.filter((r) => taken.has(`${r.resource} ${r.day}`))))).toBeLessThanOrEqual(
      Math.min(...when(before.filter((r) => !taken.has(`${r.resource} ${r.day}`)))),
    );
    console.log(`scrub nights: ${JSON.stringify(nights)}; stated period ${stated} nights`);
  });

  it('leaves the sync alone when the budget is spent by it, and makes no scrub request', async () => {
    const now = addDays(TO, 20);
    sim.resetStats();
    const result = await runNight({
      db: t.db,
      sync: () => runAgainst(t, sim, { now: new Date(`${now}T03:00:00Z`) }),
      run: () => {
        throw new Error('no verify expected');
      },
      budget: 10,
      sources: ['main'],
      lookbackDays: LOOKBACK,
      now: () => new Date(`${now}T03:00:00Z`),
      logger: silentLogger(),
    });
    expect(result.scrubbed).toEqual([]);
    expect(sim.stats().requests).toBe(requestsOf(result.sync, 'main'));
  });
});
