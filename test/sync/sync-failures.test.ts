import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiClient } from '../../src/api/api-client.js';
import { silentLogger } from '../../src/log/logger.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { runSync } from '../../src/sync/run-sync.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst, simulatorSource, TEST_SETTINGS } from '../helpers/sync-harness.js';
import { truthItems, warehouseItems } from '../helpers/warehouse-truth.js';

const FROM = '2026-03-01';
const TO = '2026-03-08';
const NOW = new Date('2026-03-09T05:00:00.000Z');

async function tableCounts(t: TestDatabase) {
  const tables = [
    'sources',
    'feedback',
    'survey_answers',
    'recordings',
    'visitors',
    'ab_tests',
    'heatmaps',
    'sync_windows',
    'watermarks',
    'rejects',
  ] as const;
  const counts: Record<string, number> = {};
  for (const table of tables) {
    const row = await t.db
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    counts[table] = Number(row.n);
  }
  return counts;
}

describe('faults and bad input', () => {
  let t: TestDatabase;
  let sim: Simulator;

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 5, from: FROM, to: TO, cap: 4000 });
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
  });

  it('a wrong API key fails the run with one clear line and writes nothing', async () => {
    const result = await runAgainst(t, sim, {
      now: NOW,
      sources: [simulatorSource(sim, 'main', 'not-the-key')],
    });
    expect(result.status).toBe('failed');
    expect(result.error).toBe(`API key rejected by ${sim.url} for source main (HTTP 401)`);
    expect(result.error).not.toContain('not-the-key');
    const counts = await tableCounts(t);
    expect(Object.values(counts).every((n) => n === 0)).toBe(true);
    // Only the first requests were made: the source stopped at the first rejection.
    expect(sim.stats().requests).toBeLessThan(20);
  });

  it('a fault rate of 0.2 (429, 5xx, resets, stalls) converges to the complete ground truth', async () => {
    sim.setOptions({ faultRate: 0.2, faults: ['429', '500', '503', 'reset', 'stall'], stallMs: 1500 });
    try {
      let result = await runAgainst(t, sim, { now: NOW, settings: { requestTimeoutMs: 300 } });
      for (let run = 0; run < 3 && result.status !== 'ok'; run++) {
        result = await runAgainst(t, sim, { now: NOW, settings: { requestTimeoutMs: 300 } });
      }
      expect(result.status).toBe('ok');
      expect(sim.stats().faultsServed).toBeGreaterThan(0);
      expect(await warehouseItems(t)).toEqual(truthItems(sim.truth()));
    } finally {
      sim.setOptions({ faultRate: 0 });
    }
  });

  it('quarantines malformed items verbatim, once, while the rest of their day loads', async () => {
    sim.setOptions({ malformedRate: 0.05 });
    try {
      const options = { now: NOW, settings: { maxInvalidShare: 1 }, sources: [simulatorSource(sim, 'bad')] };
      const result = await runAgainst(t, sim, options);
      expect(result.status).toBe('ok');
      const truth = sim.truth();
      const malformed = [
        ...truth.malformed.feedback,
        ...truth.malformed.survey,
        ...truth.malformed.recordings,
      ];
      expect(malformed.length).toBeGreaterThan(0);

      const rejects = await t.db
        .selectFrom('rejects')
        .select(['item', 'error', 'resource'])
        .where('source_id', '=', 'bad')
        .execute();
      expect(rejects.map((r) => r.item)).toEqual(expect.arrayContaining(malformed));
      expect(rejects).toHaveLength(malformed.length);
      expect(rejects.every((r) => r.error.length > 0)).toBe(true);
      expect(await warehouseItems(t, 'bad')).toEqual(truthItems(truth));

      await runAgainst(t, sim, {
        ...options,
        request: { trigger: 'backfill', range: { from: FROM, to: TO } },
      });
      const again = await t.db
        .selectFrom('rejects')
        .select('item_hash')
        .where('source_id', '=', 'bad')
        .execute();
      expect(again).toHaveLength(malformed.length);
    } finally {
      sim.setOptions({ malformedRate: 0 });
    }
  });

  it('fails a day whose share of invalid items is above the threshold instead of loading it', async () => {
    sim.setOptions({ malformedRate: 0.3 });
    try {
      const result = await runAgainst(t, sim, {
        now: NOW,
        sources: [simulatorSource(sim, 'worse')],
        request: { resources: ['feedback'] },
      });
      expect(result.status).toBe('partial');
      const failed = result.windows.filter((w) => w.status === 'failed');
      expect(failed.length).toBeGreaterThan(0);
      expect(failed[0]?.error).toMatch(
        /items invalid .* above the 5\.0% allowed by INSIGHTS_MAX_INVALID_SHARE/,
      );
      const day = failed[0]?.day as string;
      const ledger = await t.db
        .selectFrom('sync_windows')
        .select('status')
        .where('source_id', '=', 'worse')
        .where('resource', '=', 'feedback')
        .where('day', '=', day)
        .executeTakeFirstOrThrow();
      expect(ledger.status).toBe('failed');
      // The day is not done; what of it a neighbour's answer held is stored, valid and as served.
      const loaded = await t.db
        .selectFrom('feedback')
        .select('raw')
        .where('source_id', '=', 'worse')
        .where((eb) => eb.fn('date', [eb.ref('dt')]), '=', day)
        .execute();
      const valid = sim.truth().feedback.filter((f) => f.dt.startsWith(day));
      expect(valid).toEqual(expect.arrayContaining(loaded.map((r) => r.raw)));
    } finally {
      sim.setOptions({ malformedRate: 0 });
    }
  });
});

describe('watermark', () => {
  let t: TestDatabase;
  let sim: Simulator;

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 9, from: FROM, to: TO, cap: 4000 });
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
  });

  async function watermark(resource: 'feedback' | 'survey' | 'recordings') {
    const row = await t.db
      .selectFrom('watermarks')
      .select('day')
      .where('resource', '=', resource)
      .executeTakeFirst();
    return row?.day ?? null;
  }

  /** A run whose client fails every feedback request for the given day. */
  function runFailing(day: string | null, now = NOW) {
    const source = simulatorSource(sim);
    return runSync(
      {
        pool: t.pool,
        db: t.db,
        logger: silentLogger(),
        now: () => now,
        sources: [source],
        settings: { ...TEST_SETTINGS, startDate: FROM },
        createClient: (s) => {
          const client = createApiClient({ source: s, retry: { maxAttempts: 1 } });
          return {
            ...client,
            window: (resource, query, context) =>
              resource === 'feedback' && context?.day === day
                ? Promise.reject(new Error('injected failure'))
                : client.window(resource, query, context),
          };
        },
      },
      { trigger: 'sync', resources: ['feedback'] },
    );
  }

  it('is held back by a failed day even when later days succeeded', async () => {
    const result = await runFailing('2026-03-04');
    expect(result.status).toBe('partial');
    expect(await watermark('feedback')).toBe('2026-03-03');
    const later = await t.db
      .selectFrom('sync_windows')
      .select('day')
      .where('status', '=', 'done')
      .where('day', '>', '2026-03-04')
      .execute();
    expect(later).toHaveLength(4);
  });

  it('the next run retries the failed day (and the lookback), skips the done days, and catches up', async () => {
    const result = await runFailing(null);
    expect(result.status).toBe('ok');
    // 03-04, not done; then the lookback, counted from today whatever the watermark: the 3 days
    // before today (03-06..03-08) and today. The done days 03-05 and earlier are skipped.
    expect(result.windows.map((w) => w.day)).toEqual([
      '2026-03-04',
      '2026-03-06',
      '2026-03-07',
      '2026-03-08',
      '2026-03-09',
    ]);
    expect(await watermark('feedback')).toBe('2026-03-08');
  });

  it('a backfill never moves it backward, and a watermark in the future makes no request', async () => {
    const backfill = await runAgainst(t, sim, {
      now: NOW,
      request: {
        trigger: 'backfill',
        range: { from: '2026-03-02', to: '2026-03-03' },
        resources: ['feedback'],
      },
    });
    expect(backfill.status).toBe('ok');
    expect(await watermark('feedback')).toBe('2026-03-08');

    await t.db
      .updateTable('watermarks')
      .set({ day: '2026-03-20' })
      .where('resource', '=', 'feedback')
      .execute();
    sim.resetStats();
    const sync = await runAgainst(t, sim, { now: NOW, request: { resources: ['feedback'] } });
    expect(sync.windows).toHaveLength(0);
    expect(sim.stats().requests).toBe(0);
    await expect(
      t.db.updateTable('watermarks').set({ day: '2026-03-01' }).where('resource', '=', 'feedback').execute(),
    ).rejects.toThrow(/may not move backward/);
  });
});
