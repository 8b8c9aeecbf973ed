import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/db/canonical-json.js';
import type { WindowedResource } from '../../src/schemas/resources.js';
import { storableCopy } from '../../src/schemas/storable.js';
import { itemKey } from '../../src/simulator/presentation.js';
import { type GroundTruth, type Simulator, startSimulator } from '../../src/simulator/server.js';
import type { RunResult } from '../../src/sync/outcomes.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst } from '../helpers/sync-harness.js';
import { truthItems, warehouseItems } from '../helpers/warehouse-truth.js';

/**
 * The drift trial: 92 days of real-world dirt, malformed items spread at random
 * (0.5% and 2%) and odd values that are valid by the spec's types yet break a careless client
 * (2147483648 in an int4 column, U+0000 in a string). With the default INSIGHTS_MAX_INVALID_SHARE
 * (0.05), where days hold 3-19 items:
 *
 * - not one window fails (a bad item is no evidence that its day's response is broken);
 * - every valid item is stored as served, odd integers included (the columns are bigint);
 * - every malformed item is in `rejects`, verbatim, and so is every item holding U+0000, with
 *   its field named and U+FFFD in its stored copy (PostgreSQL cannot hold U+0000).
 */

const FROM = '2026-01-01';
const TO = '2026-04-02'; // 92 days
const NOW = new Date('2026-04-03T05:00:00.000Z');
const INT4_OVERFLOW = 2_147_483_648;
/** Seed 12 serves odd values of every kind, a heatmap's heatmap_limit among them. */
const SEED = 12;
const ODD_VALUE_RATE = 0.02;

const RESOURCES: readonly WindowedResource[] = ['feedback', 'survey', 'recordings'];

function holdsNul(item: unknown): boolean {
  return JSON.stringify(item).includes('\\u0000');
}

/** The ground truth less the items PostgreSQL cannot hold: what the warehouse must store. */
function storableTruth(truth: GroundTruth): GroundTruth {
  return {
    ...truth,
    feedback: truth.feedback.filter((item) => !holdsNul(item)),
    survey: truth.survey.filter((item) => !holdsNul(item)),
    recordings: truth.recordings.filter((item) => !holdsNul(item)),
  };
}

/** Each reject as `resource canonical-JSON`, sorted: comparable as lists. */
function rejectKeys(rows: ReadonlyArray<{ resource: string; item: unknown }>): string[] {
  return rows.map((r) => `${r.resource} ${canonicalJson(r.item)}`).sort();
}

describe.each([0.005, 0.02])('a 92-day drift run with %s malformed items and odd values', (malformedRate) => {
  let t: TestDatabase;
  let sim: Simulator;
  let truth: GroundTruth;
  let result: RunResult;

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({
      seed: SEED,
      from: FROM,
      to: TO,
      cap: 4000,
      malformedRate,
      oddValueRate: ODD_VALUE_RATE,
    });
    truth = sim.truth();
    result = await runAgainst(t, sim, { now: NOW, settings: { startDate: FROM } });
  }, 180_000);
  afterAll(async () => {
    await sim?.stop();
    await t?.drop();
  });

  it('serves dirt of every kind (else this trial proves nothing)', () => {
    for (const resource of RESOURCES) expect(truth.malformed[resource].length, resource).toBeGreaterThan(0);
    const kinds = (resource: keyof GroundTruth['odd'], kind: string) =>
      truth.odd[resource].filter((odd) => odd.kind === kind).length;
    expect(kinds('feedback', 'nul')).toBeGreaterThan(0);
    expect(kinds('feedback', 'int-overflow')).toBeGreaterThan(0);
    expect(kinds('survey', 'nul')).toBeGreaterThan(0);
    expect(kinds('recordings', 'nul')).toBeGreaterThan(0);
    expect(kinds('recordings', 'int-overflow')).toBeGreaterThan(0);
    expect(kinds('heatmaps', 'int-overflow')).toBeGreaterThan(0);
  });

  it('fails not one window and not one snapshot', async () => {
    expect(result.windows.filter((w) => w.status === 'failed')).toEqual([]);
    expect(result.snapshots.filter((s) => s.status !== 'done')).toEqual([]);
    expect(result.status).toBe('ok');
    const failed = await t.db
      .selectFrom('sync_windows')
      .select(['resource', 'day', 'last_error'])
      .where('status', '=', 'failed')
      .execute();
    expect(failed).toEqual([]);
    const watermarks = await t.db
      .selectFrom('watermarks')
      .select(['resource', 'day'])
      .orderBy('resource')
      .execute();
    expect(watermarks).toEqual(
      ['feedback', 'recordings', 'survey'].map((resource) => ({ resource, day: TO })),
    );
  });

  it('stores every valid item as served, odd integers exactly', async () => {
    expect(await warehouseItems(t)).toEqual(truthItems(storableTruth(truth)));
    const heatmaps = await t.db.selectFrom('heatmaps').select('raw').orderBy('id').execute();
    expect(heatmaps.map((h) => h.raw)).toEqual([...truth.heatmaps].sort((a, b) => (a.id < b.id ? -1 : 1)));

    const overflowing = async (table: string, column: string) =>
      (
        await sql<{ n: number }>`
          select count(*)::int as n from ${sql.table(table)} where ${sql.ref(column)} = ${INT4_OVERFLOW}`.execute(
          t.db,
        )
      ).rows[0]?.n;
    const odd = (resource: keyof GroundTruth['odd']) =>
      truth.odd[resource].filter((o) => o.kind === 'int-overflow').length;
    expect(await overflowing('feedback', 'rating')).toBe(odd('feedback'));
    expect(await overflowing('recordings', 'duration')).toBe(odd('recordings'));
    expect(await overflowing('heatmaps', 'heatmap_limit')).toBe(odd('heatmaps'));
  });

  it('quarantines every malformed item verbatim, and every item holding U+0000 with its field named', async () => {
    const rows = await t.db.selectFrom('rejects').select(['resource', 'item', 'error']).execute();

    const expected: Array<{ resource: string; item: unknown; error?: string }> = [];
    for (const resource of RESOURCES) {
      for (const item of truth.malformed[resource]) expected.push({ resource, item });
      const nulFields = new Map(
        truth.odd[resource].filter((o) => o.kind === 'nul').map((o) => [`${o.key} ${o.dt}`, o.field]),
      );
      const withNul = (truth[resource] as Array<Record<string, unknown>>).filter(holdsNul);
      expect(withNul.length, `${resource} items holding U+0000`).toBe(nulFields.size);
      for (const item of withNul) {
        const field = nulFields.get(`${itemKey(resource, item)} ${String(item.dt)}`);
        expect(field, `${resource} ${itemKey(resource, item)} is listed as odd`).toBeDefined();
        expected.push({
          resource,
          item: storableCopy(item).value,
          error: `${field}: contains U+0000, which PostgreSQL text cannot hold (stored copy: U+0000 and unpaired surrogates shown as U+FFFD)`,
        });
      }
    }
    expect(rejectKeys(rows)).toEqual(rejectKeys(expected));

    const errors = new Map(rows.map((r) => [`${r.resource} ${canonicalJson(r.item)}`, r.error]));
    for (const reject of expected) {
      const error = errors.get(`${reject.resource} ${canonicalJson(reject.item)}`);
      if (reject.error === undefined) expect(error?.length ?? 0).toBeGreaterThan(0);
      else expect(error).toBe(reject.error);
    }
  });
});
