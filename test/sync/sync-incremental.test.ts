import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bookkeepingSchema } from '../../src/db/bookkeeping.js';
import { createDb, createPool } from '../../src/db/connection.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { lateArrivalStatus } from '../../src/status/late-arrival-status.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst } from '../helpers/sync-harness.js';
import { truthItems, warehouseItems } from '../helpers/warehouse-truth.js';

const FROM = '2026-03-01';
const TO = '2026-03-09';
const NOW = new Date('2026-03-10T05:00:00.000Z');
const DATA_TABLES = [
  'feedback',
  'survey_answers',
  'recordings',
  'visitors',
  'ab_tests',
  'personalization_tests',
  'test_results',
  'heatmaps',
] as const;

/** Every row's physical version: an UPDATE, even to identical values, changes xmin. */
async function rowVersions(t: TestDatabase, table: string): Promise<string[]> {
  const rows = await sql<{
    v: string;
  }>`select xmin::text || ':' || ctid::text as v from ${sql.table(table)} order by 1`.execute(t.db);
  return rows.rows.map((r) => r.v);
}

/** Postgres' cumulative count of updated tuples; read after the writers' connections closed (flushes stats). */
async function updatedTuples(t: TestDatabase, tables: readonly string[]): Promise<number> {
  const rows = await sql<{ n: number }>`
    select coalesce(sum(n_tup_upd), 0)::int as n from pg_stat_user_tables
    where schemaname in (${t.schema}, ${bookkeepingSchema(t.schema)}) and relname in (${sql.join(tables.map((x) => sql.lit(x)))})`.execute(
    t.db,
  );
  return rows.rows[0]?.n ?? -1;
}

/**
 * The first run's counts once its backends have flushed them: a backend flushes its statistics
 * as it exits, which can be after pool.end() resolves (a CI run read 12, then 14 without any rerun
 * update). Unchanged over three reads 300 ms apart.
 */
async function settledUpdates(t: TestDatabase, tables: readonly string[]): Promise<number> {
  let last = await updatedTuples(t, tables);
  for (let same = 0; same < 3; ) {
    await new Promise((resolve) => setTimeout(resolve, 300));
    const now = await updatedTuples(t, tables);
    same = now === last ? same + 1 : 0;
    last = now;
  }
  return last;
}

describe('incremental runs', () => {
  let t: TestDatabase;
  let sim: Simulator;

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 11, from: FROM, to: TO, cap: 4000 });
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
  });

  it('re-running a window leaves every row untouched: same row versions, 0 updated tuples', async () => {
    const windowTables = ['feedback', 'survey_answers', 'recordings', 'visitors'];
    // Each run on a pool of its own: closing it ends its backends, which flushes their statistics.
    const firstPool = createPool({ url: t.url, schema: t.schema });
    await runAgainst({ ...t, pool: firstPool, db: createDb(firstPool) }, sim, { now: NOW });
    await firstPool.end();
    const before = await Promise.all(windowTables.map((table) => rowVersions(t, table)));
    const ledgerBefore = await settledUpdates(t, ['sync_windows']);
    const updatesBefore = await settledUpdates(t, windowTables);

    const rerunPool = createPool({ url: t.url, schema: t.schema });
    const rerun = await runAgainst({ ...t, pool: rerunPool, db: createDb(rerunPool) }, sim, {
      now: NOW,
      request: {
        trigger: 'backfill',
        range: { from: FROM, to: TO },
        resources: ['feedback', 'survey', 'recordings'],
      },
    });
    await rerunPool.end();

    expect(rerun.status).toBe('ok');
    expect(rerun.windows.every((w) => w.inserted === 0 && w.updated === 0)).toBe(true);
    expect(await Promise.all(windowTables.map((table) => rowVersions(t, table)))).toEqual(before);
    // The rerun rewrote one ledger row per window: once those updates show, its statistics are in.
    await expect
      .poll(() => updatedTuples(t, ['sync_windows']), { timeout: 15_000 })
      .toBeGreaterThanOrEqual(ledgerBefore + rerun.windows.length);
    expect(await updatedTuples(t, windowTables)).toBe(updatesBefore);
  });

  it('picks up late items and edits within the lookback, removes a test and grows its results', async () => {
    const report = sim.advance();
    expect(report.late.feedback + report.late.survey + report.late.recordings).toBeGreaterThan(0);
    expect(report.edited.length).toBeGreaterThan(0);
    expect(report.removedTests).toHaveLength(1);

    const result = await runAgainst(t, sim, { now: NOW });
    expect(result.status).toBe('ok');
    expect(await warehouseItems(t)).toEqual(truthItems(sim.truth()));
    const summary = result.summary.main;
    expect(summary?.feedback?.updated).toBe(report.edited.length);
    // Every late item is stored new: by its own day's window, or by a neighbour's whose answer
    // held it (which window stores it first is a race).
    expect((summary?.feedback?.inserted ?? 0) + (summary?.feedback?.neighboursAdded ?? 0)).toBe(
      report.late.feedback,
    );

    // The late items are counted as such, by the age of their day; the first run's items were not late.
    const late = await t.db.selectFrom('late_arrivals').selectAll().execute();
    expect(new Set(late.map((r) => Number(r.run_id)))).toEqual(new Set([result.runId]));
    for (const resource of ['feedback', 'survey', 'recordings'] as const)
      expect(late.filter((r) => r.resource === resource).reduce((n, r) => n + r.items, 0)).toBe(
        report.late[resource],
      );
    const ages = report.lateDays.map((day) =>
      Math.round((NOW.getTime() - Date.parse(`${day}T00:00:00Z`)) / 86_400_000),
    );
    expect(new Set(late.map((r) => r.day_age))).toEqual(new Set(ages));
    // What status shows: per resource, the spread and the lookback that would have caught them.
    const shown = await lateArrivalStatus(t.db, 3, new Date());
    const feedback = shown.find((s) => s.resource === 'feedback');
    expect(feedback?.items).toBe(report.late.feedback);
    expect(feedback?.lookbackCovering).toBe(Math.max(...(feedback?.byAge ?? []).map((a) => a.dayAge)));

    const removedId = report.removedTests[0] as string;
    const removed = await t.db
      .selectFrom('ab_tests')
      .select(['removed_at'])
      .where('id', '=', removedId)
      .executeTakeFirstOrThrow();
    expect(removed.removed_at).toBeInstanceOf(Date);
    const removedResults = await t.db
      .selectFrom('test_results')
      .select('removed_at')
      .where('test_id', '=', removedId)
      .execute();
    expect(removedResults.length).toBeGreaterThan(0);
    expect(removedResults.every((r) => r.removed_at instanceof Date)).toBe(true);

    const grown = report.grownTests.filter((id) => id !== removedId)[0] as string;
    const current = await t.db
      .selectFrom('test_results')
      .select(['variant', 'complete', 'total'])
      .where('test_id', '=', grown)
      .execute();
    const truthResults =
      sim.truth().results.abtesting[grown] ?? sim.truth().results.personalization[grown] ?? [];
    expect(current).toEqual(
      expect.arrayContaining(
        truthResults.map(({ variant, complete, total }) => ({ variant, complete, total })),
      ),
    );
  });

  it('revives a test that comes back, and keeps one history row per test, variant and day', async () => {
    const report = sim.advance({ restoreRemoved: true });
    expect(report.restoredTests).toHaveLength(1);
    const later = new Date('2026-03-11T05:00:00.000Z');
    const result = await runAgainst(t, sim, { now: later });
    expect(result.status).toBe('ok');

    const restored = report.restoredTests[0] as string;
    const row = await t.db
      .selectFrom('ab_tests')
      .select(['removed_at'])
      .where('id', '=', restored)
      .executeTakeFirstOrThrow();
    expect(row.removed_at).toBeNull();
    const results = await t.db
      .selectFrom('test_results')
      .select('removed_at')
      .where('test_id', '=', restored)
      .execute();
    expect(results.every((r) => r.removed_at === null)).toBe(true);

    const history = await sql<{ days: number; dupes: number }>`
      select count(distinct day)::int as days,
             (select count(*)::int from (select 1 from test_result_history group by source_id, test_kind, test_id, variant, day having count(*) > 1) d) as dupes
      from test_result_history`.execute(t.db);
    expect(history.rows[0]).toEqual({ days: 2, dupes: 0 });
  });

  it('never rewrites snapshot content that did not change (only last_seen_at moves)', async () => {
    const before = await t.db
      .selectFrom('heatmaps')
      .select(['id', 'last_changed_at', 'last_seen_at'])
      .orderBy('id')
      .execute();
    await runAgainst(t, sim, { now: new Date('2026-03-11T06:00:00.000Z') });
    const after = await t.db
      .selectFrom('heatmaps')
      .select(['id', 'last_changed_at', 'last_seen_at'])
      .orderBy('id')
      .execute();
    expect(after.map((h) => h.last_changed_at)).toEqual(before.map((h) => h.last_changed_at));
    expect(after.every((h, i) => h.last_seen_at >= (before[i]?.last_seen_at ?? h.last_seen_at))).toBe(true);
    for (const table of DATA_TABLES) {
      const n = await sql<{ n: number }>`select count(*)::int as n from ${sql.table(table)}`.execute(t.db);
      expect(n.rows[0]?.n, table).toBeGreaterThan(0);
    }
  });
});
