/**
 * Test and heatmap history: every change of a test's or heatmap's attributes,
 * and every removal and comeback, is kept as a dated version (valid_from, valid_to) beside the
 * latest copy; an unchanged run writes none, and concurrent loads never leave two current versions.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as snapshotVersions from '../../migrations/0015-snapshot-versions.js';
import { inTransaction } from '../../src/db/transaction.js';
import { loadTests } from '../../src/load/snapshots.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst } from '../helpers/sync-harness.js';

const FROM = '2026-03-01';
const TO = '2026-03-05';

describe('test and heatmap history', () => {
  let t: TestDatabase;
  let sim: Simulator;
  let day = 6;
  const run = () =>
    runAgainst(t, sim, {
      now: new Date(`2026-03-${String(day++).padStart(2, '0')}T05:00:00.000Z`),
      request: { resources: ['abtesting', 'personalization', 'heatmaps'] },
    });

  const abVersions = (id?: string) =>
    t.db
      .selectFrom('ab_test_versions')
      .selectAll()
      .$if(id !== undefined, (qb) => qb.where('id', '=', id as string))
      .orderBy('id')
      .orderBy('valid_from')
      .execute();
  const count = async (table: 'ab_test_versions' | 'personalization_test_versions' | 'heatmap_versions') =>
    Number(
      (await sql<{ n: string }>`select count(*) as n from ${sql.table(table)}`.execute(t.db)).rows[0]?.n,
    );

  /** Every id's versions follow each other without gap or overlap, the last one current, matching its row. */
  async function expectConsistentHistory(): Promise<void> {
    const broken = await sql<{ id: string; problem: string }>`
      select id, 'two current versions' as problem from ab_test_versions
       where valid_to is null group by source_id, id having count(*) > 1
      union all
      select v.id, 'a gap or an overlap' from ab_test_versions v
       where v.valid_to is not null and not exists (
         select 1 from ab_test_versions n
          where n.source_id = v.source_id and n.id = v.id and n.valid_from = v.valid_to)
      union all
      select t.id, 'current version differs from the row' from ab_tests t
        left join ab_test_versions v on v.source_id = t.source_id and v.id = t.id and v.valid_to is null
       where (v.test_name, v.url, v.goal_profile_id, v.removed)
             is distinct from (t.test_name, t.url, t.goal_profile_id, t.removed_at is not null)`.execute(
      t.db,
    );
    expect(broken.rows).toEqual([]);
  }

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 7, from: FROM, to: TO });
  });
  afterAll(async () => {
    await sim?.stop();
    await t?.drop();
  });

  it('a first run opens one current version per test and heatmap', async () => {
    expect((await run()).status).toBe('ok');
    const truth = sim.truth();
    const versions = await abVersions();
    expect(versions.map((v) => v.id)).toEqual(truth.abTests.map((x) => x.id).sort());
    expect(versions.every((v) => v.valid_to === null && !v.removed)).toBe(true);
    expect(await count('personalization_test_versions')).toBe(truth.personalizationTests.length);
    expect(await count('heatmap_versions')).toBe(truth.heatmaps.length);
    await expectConsistentHistory();
  });

  it('a rename between two syncs gives two versions, the old one ending where the new one begins', async () => {
    const test = sim.truth().abTests[0];
    if (test === undefined) throw new Error('the simulator lists no A/B test');
    sim.editTest('abtesting', test.id, { test_name: `${test.test_name} (renamed)` });

    expect((await run()).status).toBe('ok');

    const [before, after] = await abVersions(test.id);
    expect(before).toMatchObject({ test_name: test.test_name, removed: false });
    expect(after).toMatchObject({ test_name: `${test.test_name} (renamed)`, valid_to: null, removed: false });
    expect(before?.valid_to).toEqual(after?.valid_from);
    expect(await abVersions()).toHaveLength(sim.truth().abTests.length + 1);
    await expectConsistentHistory();
  });

  it('a heatmap whose end time is set gets a new version', async () => {
    const heatmap = sim.truth().heatmaps[0];
    if (heatmap === undefined) throw new Error('the simulator lists no heatmap');
    sim.editHeatmap(heatmap.id, { end_time: '2026-04-01T00:00:00.000Z' });

    expect((await run()).status).toBe('ok');

    const versions = await t.db
      .selectFrom('heatmap_versions')
      .select(['end_time', 'valid_from', 'valid_to'])
      .where('id', '=', heatmap.id)
      .orderBy('valid_from')
      .execute();
    expect(versions.map((v) => v.end_time?.toISOString() ?? null)).toEqual([
      heatmap.end_time === null ? null : new Date(heatmap.end_time).toISOString(),
      '2026-04-01T00:00:00.000Z',
    ]);
    expect(versions[0]?.valid_to).toEqual(versions[1]?.valid_from);
  });

  it('an unchanged re-run writes no version', async () => {
    const before = {
      ab: await abVersions(),
      personalization: await count('personalization_test_versions'),
      heatmaps: await count('heatmap_versions'),
    };
    expect((await run()).status).toBe('ok');
    expect(await abVersions()).toEqual(before.ab);
    expect(await count('personalization_test_versions')).toBe(before.personalization);
    expect(await count('heatmap_versions')).toBe(before.heatmaps);
  });

  it('a change of updated_at alone is no new version; a removal is one, and so is the comeback', async () => {
    const before = await abVersions();
    // advance() removes one A/B test (its detail then answers 404) and moves the others' updated_at.
    const report = sim.advance();
    const gone = report.removedTests[0];
    if (gone === undefined) throw new Error('advance removed no test');
    expect(report.grownTests.length).toBeGreaterThan(1);

    expect((await run()).status).toBe('ok');

    const after = await abVersions();
    expect(after).toHaveLength(before.length + 1);
    const [alive, removal] = after.filter((v) => v.id === gone).slice(-2);
    expect(removal).toMatchObject({ removed: true, valid_to: null, test_name: alive?.test_name });
    expect(alive?.valid_to).toEqual(removal?.valid_from);
    const removedAt = await t.db
      .selectFrom('ab_tests')
      .select('removed_at')
      .where('id', '=', gone)
      .executeTakeFirst();
    expect(removedAt?.removed_at).toBeInstanceOf(Date);

    sim.advance({ restoreRemoved: true });
    expect((await run()).status).toBe('ok');
    const back = await abVersions(gone);
    expect(back.slice(-2).map((v) => v.removed)).toEqual([true, false]);
    expect(back.at(-2)?.valid_to).toEqual(back.at(-1)?.valid_from);
    await expectConsistentHistory();
  });

  it('concurrent runs and loads never leave two current versions, and the history stays one chain', async () => {
    const test = sim.truth().abTests[1];
    if (test === undefined) throw new Error('the simulator lists fewer than 2 A/B tests');
    sim.editTest('abtesting', test.id, { url: 'https://shop.example.com/concurrent' });
    const runs = await Promise.all([run(), run(), run()]);
    expect(runs.map((r) => r.status)).toEqual(['ok', 'ok', 'ok']);
    await expectConsistentHistory();
    expect(
      (await abVersions(test.id)).filter((v) => v.url === 'https://shop.example.com/concurrent'),
    ).toHaveLength(1);

    // Loads of two different lists racing each other: whichever commits last is the current version.
    const list = sim.truth().abTests;
    const named = (suffix: string) =>
      list.map((x) => (x.id === test.id ? { ...x, test_name: `race ${suffix}` } : x));
    await Promise.all(
      ['a', 'b', 'a', 'b', 'a', 'b'].map((suffix) =>
        inTransaction(t.pool, (trx) =>
          loadTests(trx, 'abtesting', 'main', named(suffix), { complete: true }),
        ),
      ),
    );
    await expectConsistentHistory();
    const races = (await abVersions(test.id)).filter((v) => v.test_name.startsWith('race '));
    // Each load that found the other name stored opened a version: never two for one load.
    expect(races.length).toBeGreaterThanOrEqual(2);
    expect(races.length).toBeLessThanOrEqual(6);
  });

  it('the migration seeds the history from the rows already stored', async () => {
    // The rows as the service lists them again (the racing loads above left a name of their own).
    expect((await run()).status).toBe('ok');
    const removed = (
      await t.db.selectFrom('ab_tests').select('id').where('removed_at', 'is', null).execute()
    )[0];
    if (removed === undefined) throw new Error('no listed A/B test');
    await snapshotVersions.down(t.db);
    // A removal the old code recorded (no version table then), an instant after the row's last change.
    await sql`update ab_tests set removed_at = last_changed_at + interval '1 millisecond' where id = ${removed.id}`.execute(
      t.db,
    );

    await snapshotVersions.up(t.db);

    const rows = await t.db.selectFrom('ab_tests').selectAll().orderBy('id').execute();
    const versions = await abVersions();
    expect(versions.filter((v) => v.valid_to === null).map((v) => v.id)).toEqual(rows.map((r) => r.id));
    for (const row of rows) {
      const own = versions.filter((v) => v.id === row.id);
      expect(own[0]).toMatchObject({
        valid_from: row.last_changed_at,
        test_name: row.test_name,
        removed: false,
      });
      if (row.removed_at === null) expect(own).toHaveLength(1);
      else
        expect(own.slice(-2)).toEqual([
          expect.objectContaining({ removed: false, valid_to: row.removed_at }),
          expect.objectContaining({ removed: true, valid_from: row.removed_at, valid_to: null }),
        ]);
    }
    await expectConsistentHistory();
    // A run after the seed finds nothing changed.
    const seeded = await abVersions();
    await sql`update ab_tests set removed_at = null where id = ${removed.id}`.execute(t.db);
    expect((await run()).status).toBe('ok');
    // The comeback (removed_at cleared by hand, listed by the service) is one version more.
    expect(await abVersions()).toHaveLength(seeded.length + 1);
  });
});
