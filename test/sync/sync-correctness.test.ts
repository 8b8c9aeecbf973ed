import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { statusReport } from '../../src/status/status-report.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst, simulatorSource } from '../helpers/sync-harness.js';
import { truthItems, warehouseItems } from '../helpers/warehouse-truth.js';

// Ten days of data; the tenth (2026-03-10) is the busy day with 1,500 feedback items.
const FROM = '2026-03-01';
const TO = '2026-03-10';
const NOW = new Date('2026-03-11T05:00:00.000Z');

describe('a sync loads every record, whatever the server does where the spec is silent', () => {
  let t: TestDatabase;
  let sim: Simulator;

  beforeAll(async () => {
    t = await createTestDatabase();
    // A cap above the busy day: escalating the limit must then fetch all of it.
    sim = await startSimulator({ seed: 7, from: FROM, to: TO, cap: 4000, extraFields: true });
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
  });

  const readings = [
    { enddate: 'inclusive', order: 'oldest-first' },
    { enddate: 'inclusive', order: 'newest-first' },
    { enddate: 'exclusive', order: 'oldest-first' },
    { enddate: 'exclusive', order: 'newest-first' },
  ] as const;

  for (const reading of readings) {
    it(`equals the ground truth field by field with ${reading.enddate} bounds, ${reading.order}`, async () => {
      sim.setOptions(reading);
      const name = `${reading.enddate}-${reading.order}`;
      const result = await runAgainst(t, sim, { now: NOW, sources: [simulatorSource(sim, name)] });

      expect(result.status).toBe('ok');
      expect(await warehouseItems(t, name)).toEqual(truthItems(sim.truth()));
      expect(result.summary[name]?.feedback?.truncatedDays).toEqual([]);
    });
  }

  it('fills the typed columns from the items, and each visitor once with identical attributes', async () => {
    const mismatches = await sql<{ n: number }>`
      select count(*)::int as n from feedback
      where id <> (raw->>'id')::bigint or feedback_id <> (raw->>'feedback_id')::bigint
         or question <> raw->>'question' or session <> raw->>'session' or comment <> raw->>'comment'
         or rating <> (raw->>'rating')::int or rating_text <> raw->>'rating_text'
         or dt <> (raw->>'dt')::timestamptz or url <> raw->>'url' or screenshot <> raw->>'screenshot'
         or visitor_id <> raw->'visitor'->>'id'`.execute(t.db);
    expect(mismatches.rows[0]?.n).toBe(0);

    const truth = sim.truth();
    const visitors = new Map<string, unknown>();
    for (const item of [...truth.feedback, ...truth.survey]) visitors.set(item.visitor.id, item.visitor);
    const rows = await t.db
      .selectFrom('visitors')
      .select(['id', 'raw', 'email', 'company', 'ref_page'])
      .where('source_id', '=', 'inclusive-oldest-first')
      .orderBy('id')
      .execute();
    expect(rows.map((r) => r.id)).toEqual([...visitors.keys()].sort());
    for (const row of rows) expect(row.raw).toEqual(visitors.get(row.id));
  });

  it('keeps fields the spec does not list in raw', async () => {
    const row = await t.db.selectFrom('feedback').select('raw').limit(1).executeTakeFirstOrThrow();
    expect(Object.keys(row.raw as object)).toEqual(expect.arrayContaining(['x_extra']));
  });

  it('keys survey answers by (id, question_id): a response answering several questions keeps each answer', async () => {
    const shared = await sql<{ n: number }>`
      select count(*)::int as n from (
        select id from survey_answers where source_id = 'exclusive-oldest-first' group by id having count(*) > 1
      ) multi`.execute(t.db);
    expect(shared.rows[0]?.n).toBeGreaterThan(0);
  });

  it('snapshots A/B and personalization tests with their per-variant results, and heatmaps', async () => {
    const truth = sim.truth();
    const source = 'inclusive-oldest-first';
    const ab = await t.db
      .selectFrom('ab_tests')
      .select('raw')
      .where('source_id', '=', source)
      .orderBy('id')
      .execute();
    expect(ab.map((r) => r.raw)).toEqual([...truth.abTests].sort((a, b) => a.id.localeCompare(b.id)));
    const pz = await t.db
      .selectFrom('personalization_tests')
      .select('raw')
      .where('source_id', '=', source)
      .orderBy('id')
      .execute();
    expect(pz.map((r) => r.raw)).toEqual(
      [...truth.personalizationTests].sort((a, b) => a.id.localeCompare(b.id)),
    );

    const results = await t.db
      .selectFrom('test_results')
      .select(['test_kind', 'test_id', 'variant', 'complete', 'total'])
      .where('source_id', '=', source)
      .execute();
    const expected = (['abtesting', 'personalization'] as const).flatMap((kind) =>
      Object.entries(truth.results[kind]).flatMap(([testId, variants]) =>
        variants.map((v) => ({
          test_kind: kind,
          test_id: testId,
          variant: v.variant,
          complete: v.complete,
          total: v.total,
        })),
      ),
    );
    expect(results).toEqual(expect.arrayContaining(expected));
    expect(results).toHaveLength(expected.length);
    expect(results.some((r) => r.variant === 'control')).toBe(true);

    const history = await t.db
      .selectFrom('test_result_history')
      .select(['day'])
      .where('source_id', '=', source)
      .execute();
    expect(history).toHaveLength(expected.length);
    expect(new Set(history.map((h) => h.day))).toEqual(new Set(['2026-03-11']));

    const heatmaps = await t.db
      .selectFrom('heatmaps')
      .select(['raw', 'end_time'])
      .where('source_id', '=', source)
      .orderBy('id')
      .execute();
    expect(heatmaps.map((h) => h.raw)).toEqual([...truth.heatmaps].sort((a, b) => a.id.localeCompare(b.id)));
    expect(heatmaps.some((h) => h.end_time === null)).toBe(true);
    expect(heatmaps.some((h) => h.end_time instanceof Date)).toBe(true);
  });

  it('moves each watermark to the last closed day and leaves today open', async () => {
    const marks = await t.db
      .selectFrom('watermarks')
      .select(['resource', 'day'])
      .where('source_id', '=', 'inclusive-oldest-first')
      .execute();
    expect(marks.map((m) => m.day)).toEqual(['2026-03-10', '2026-03-10', '2026-03-10']);
    const today = await t.db
      .selectFrom('sync_windows')
      .select('status')
      .where('source_id', '=', 'inclusive-oldest-first')
      .where('day', '=', '2026-03-11')
      .execute();
    expect(today.map((w) => w.status)).toEqual(['open', 'open', 'open']);
  });
});

describe('a day the server caps below its volume', () => {
  let t: TestDatabase;
  let sim: Simulator;

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 3, from: FROM, to: TO, cap: 1000 });
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
  });

  it('is loaded as far as it came, marked truncated in the ledger, and reported by the run and by status', async () => {
    const result = await runAgainst(t, sim, { now: NOW });
    const busyDay = sim.truth().meta.busyDay;
    expect(busyDay).toBe(TO);

    expect(result.summary.main?.feedback?.truncatedDays).toEqual([busyDay]);
    const window = await t.db
      .selectFrom('sync_windows')
      .select(['truncated', 'item_count', 'status'])
      .where('resource', '=', 'feedback')
      .where('day', '=', busyDay as string)
      .executeTakeFirstOrThrow();
    expect(window).toEqual({ truncated: true, item_count: 1000, status: 'done' });
    const loaded = await sql<{
      n: number;
    }>`select count(*)::int as n from feedback where dt::date = ${busyDay}`.execute(t.db);
    expect(loaded.rows[0]?.n).toBe(1000);

    const report = await statusReport(t.db, '2026-03-11');
    expect(report.resources.find((r) => r.resource === 'feedback')?.truncatedDays).toEqual([busyDay]);
    // The other days are complete.
    const others = truthItems(sim.truth(), { from: FROM, to: '2026-03-09' });
    const stored = await warehouseItems(t);
    expect(stored.feedback.filter((f) => !(f as { dt: string }).dt.startsWith(busyDay as string))).toEqual(
      others.feedback,
    );
  });
});
