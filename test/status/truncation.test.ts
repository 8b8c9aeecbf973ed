import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderStatus } from '../../src/cli/status.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { statusReport } from '../../src/status/status-report.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst, simulatorSource } from '../helpers/sync-harness.js';

// Ten days; the 10th (2026-03-10) holds 1,500 feedback items, every other day a few dozen at most.
const FROM = '2026-03-01';
const TO = '2026-03-10';
const BUSY = '2026-03-10';
const NIGHT = new Date('2026-03-12T03:00:00.000Z');

describe('a day the server cannot serve whole is never silent', () => {
  let t: TestDatabase;
  let sim: Simulator;

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 5, from: FROM, to: TO, cap: 100, order: 'newest-first' });
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
  });

  async function ledger(source: string, day: string) {
    return t.db
      .selectFrom('sync_windows')
      .select(['truncated', 'item_count', 'served_count', 'requested_limit'])
      .where('source_id', '=', source)
      .where('resource', '=', 'feedback')
      .where('day', '=', day)
      .executeTakeFirstOrThrow();
  }

  it('flags the busy day behind a silent cap of 100, says why in status, and alerts on it once', async () => {
    const source = simulatorSource(sim, 'capped');
    const backfill = await runAgainst(t, sim, {
      now: NIGHT,
      sources: [source],
      request: { trigger: 'backfill', range: { from: FROM, to: TO } },
    });
    expect(backfill.summary.capped?.feedback?.truncatedDays).toEqual([BUSY]);
    expect(await ledger('capped', BUSY)).toMatchObject({
      truncated: true,
      item_count: 100,
      served_count: 100,
    });

    const report = await statusReport(t.db, '2026-03-12');
    const feedback = report.resources.find((r) => r.source === 'capped' && r.resource === 'feedback');
    expect(feedback?.truncatedDays).toEqual([BUSY]);
    expect(feedback?.newTruncatedDays).toEqual([BUSY]);
    expect(feedback?.reading).toMatchObject({
      cap: 100,
      order: 'newest-first',
      startInclusive: true,
      endInclusive: true,
    });
    expect(feedback?.reading?.summary).toContain('cap 100 per response');
    expect(renderStatus(report)).toContain('capped/feedback: startdate inclusive, enddate inclusive');

    // The next night re-reads the busy day once (is the cap still there?) and flags it again;
    // a day that is not flagged again by the latest run stops being new.
    await runAgainst(t, sim, { now: NIGHT, sources: [source], settings: { startDate: FROM } });
    sim.setOptions({ cap: 1000 });
    try {
      const third = await runAgainst(t, sim, {
        now: NIGHT,
        sources: [source],
        settings: { startDate: FROM },
      });
      // The server raised its cap to 1,000: still short of 1,500, flagged, but fuller.
      expect(third.summary.capped?.feedback?.truncatedDays).toEqual([BUSY]);
      expect(await ledger('capped', BUSY)).toMatchObject({ truncated: true, served_count: 1000 });
    } finally {
      sim.setOptions({ cap: 100 });
    }
  });

  it('reads a day whole once the server raises its cap above it', async () => {
    const source = simulatorSource(sim, 'raised');
    await runAgainst(t, sim, {
      now: NIGHT,
      sources: [source],
      request: { trigger: 'backfill', range: { from: FROM, to: TO } },
    });
    expect(await ledger('raised', BUSY)).toMatchObject({ truncated: true });
    sim.setOptions({ cap: 4000 });
    try {
      const sync = await runAgainst(t, sim, { now: NIGHT, sources: [source], settings: { startDate: FROM } });
      expect(sync.windows.map((w) => `${w.resource}/${w.day}`)).toContain(`feedback/${BUSY}`);
      expect(await ledger('raised', BUSY)).toMatchObject({ truncated: false, item_count: 1500 });
      const report = await statusReport(t.db, '2026-03-12');
      expect(
        report.resources.find((r) => r.source === 'raised' && r.resource === 'feedback')?.truncatedDays,
      ).toEqual([]);
    } finally {
      sim.setOptions({ cap: 100 });
    }
  });

  it('reads a day further once INSIGHTS_MAX_LIMIT is raised above the limit it filled', async () => {
    sim.setOptions({ cap: 4000 });
    try {
      const source = simulatorSource(sim, 'ceiling');
      const low = { limit: 500, maxLimit: 1000 };
      await runAgainst(t, sim, {
        now: NIGHT,
        sources: [source],
        settings: low,
        request: { trigger: 'backfill', range: { from: FROM, to: TO } },
      });
      expect(await ledger('ceiling', BUSY)).toMatchObject({
        truncated: true,
        item_count: 1000,
        requested_limit: 1000,
      });
      const raised = await runAgainst(t, sim, {
        now: NIGHT,
        sources: [source],
        settings: { startDate: FROM, limit: 500, maxLimit: 4000 },
      });
      expect(raised.windows.map((w) => `${w.resource}/${w.day}`)).toContain(`feedback/${BUSY}`);
      expect(await ledger('ceiling', BUSY)).toMatchObject({ truncated: false, item_count: 1500 });
    } finally {
      sim.setOptions({ cap: 100 });
    }
  });

  it('counts cross-day key collisions, keeps every version, and shows them in status', async () => {
    sim.setOptions({ cap: 4000, reuseIds: 0.5 });
    try {
      const source = simulatorSource(sim, 'reused');
      const run = await runAgainst(t, sim, {
        now: NIGHT,
        sources: [source],
        request: { trigger: 'backfill', range: { from: FROM, to: TO } },
      });
      const collided = Object.values(run.summary.reused ?? {}).reduce((n, r) => n + (r?.collisions ?? 0), 0);
      const kept = await t.db
        .selectFrom('key_collisions')
        .select(t.db.fn.countAll<number>().as('n'))
        .where('source_id', '=', 'reused')
        .executeTakeFirstOrThrow();
      expect(collided).toBeGreaterThan(0);
      expect(Number(kept.n)).toBe(collided);
      // Re-running adds no new collision: each version is set aside once.
      const again = await runAgainst(t, sim, {
        now: NIGHT,
        sources: [source],
        request: { trigger: 'backfill', range: { from: FROM, to: TO } },
      });
      expect(Object.values(again.summary.reused ?? {}).reduce((n, r) => n + (r?.collisions ?? 0), 0)).toBe(0);
      const report = await statusReport(t.db, '2026-03-12');
      const total = report.resources
        .filter((r) => r.source === 'reused')
        .reduce((n, r) => n + r.keyCollisions, 0);
      expect(total).toBe(collided);
    } finally {
      sim.setOptions({ cap: 100, reuseIds: 0 });
    }
  });
});
