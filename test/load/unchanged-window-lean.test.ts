import { Writable } from 'node:stream';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bookkeepingSchema } from '../../src/db/bookkeeping.js';
import { inTransaction } from '../../src/db/transaction.js';
import { ensureSource } from '../../src/load/sources.js';
import { loadWindowItems } from '../../src/load/windowed.js';
import { createLogger } from '../../src/log/logger.js';
import type { Feedback } from '../../src/schemas/feedback.js';
import { noteWindowDrift, windowDrift } from '../../src/sync/schema-drift.js';
import { storeWindow } from '../../src/sync/store-window.js';
import type { DayString } from '../../src/time/days.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { mergeFunctionDefinitions, testMigrator } from '../helpers/merge-migrations.js';
import { feedbackItem, feedbackWindow } from './window-items.js';

/**
 * A window the warehouse already holds as it is (migration 0047): the merge skips the statements
 * that could only write nothing, and store_window() updates the inventory of unknown fields in the
 * window's own statement. What a window off that case writes is covered where each case is
 * (test/load/served-clears-marks.test.ts, window-merge-passes.test.ts, test/sync/key-moves.test.ts).
 */
const DAY = '2026-05-04' as DayString;
const BASE_URL = 'http://api.example.test';
const day = (d: DayString) => Array.from({ length: 20 }, (_, i) => feedbackItem(d, 100 + i));

describe('an unchanged window', () => {
  let t: TestDatabase;

  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(() => t.drop());

  const windowOf = (source: string, valid: Feedback[], drift?: { total: number }) =>
    feedbackWindow({
      sourceId: source,
      baseUrl: BASE_URL,
      day: DAY,
      valid,
      startDay: DAY,
      today: '2026-05-10' as DayString,
      ...(drift === undefined ? {} : { drift }),
    });
  /** The row versions of the source's items and visitors: a row written again gets a new one. */
  const versions = async (source: string) =>
    (
      await sql<{ v: string }>`
        select xmin::text || '/' || ctid::text as v from feedback where source_id = ${source}
        union all
        select xmin::text || '/' || ctid::text from visitors where source_id = ${source}
        order by 1`.execute(t.db)
    ).rows.map((r) => r.v);

  it('down gives back the merge of 0046, up this one again, rights and settings kept', async () => {
    const migrator = testMigrator(t);
    const latest = await definitions(t);
    for (const { name, def } of latest)
      expect(def, name).toMatch(name === 'store_window' ? /'drift'/ : /v_unchanged/);
    expect(latest.find((d) => d.name === 'store_window')?.def).toMatch(/p_ledger \? 'drift'/);
    for (const { name, def } of latest.filter((d) => d.name !== 'store_window'))
      expect(def, name).toMatch(/SET plan_cache_mode TO 'force_generic_plan'/);
    expect((await migrator.migrateTo('0046-merge-shortcuts-planned-once')).error).toBeUndefined();
    for (const { name, def } of await definitions(t)) {
      expect(def, name).not.toMatch(/v_unchanged|'drift'|plan_cache_mode/);
      if (name !== 'merge_window_recordings' && name !== 'store_window')
        expect(def, name).toMatch(
          /from merge_visitors\(v\.sources, v\.visitors, v\.visitors, v\.observed\) r\) m;/,
        );
    }
    expect((await migrator.migrateToLatest()).error).toBeUndefined();
    expect(await definitions(t)).toEqual(latest);
  });

  it('stored again as it is: the same counts, no row written again, no visitor merged', async () => {
    const source = 'again';
    const first = await storeWindow(t.pool, windowOf(source, day(DAY)));
    expect(first).toMatchObject({ inserted: 20, visitors: { inserted: 20 } });
    const before = await versions(source);
    const again = await inTransaction(t.pool, async (trx) => {
      await trx.query("set local track_functions = 'all'", []);
      const loaded = await loadWindowItems(trx, 'feedback', source, day(DAY), { wholeDay: DAY });
      const { rows } = await trx.query(
        "select pg_stat_get_xact_function_calls('merge_visitors'::regproc) as calls",
        [],
      );
      return { loaded, visitorMerges: Number(rows[0]?.calls ?? 0) };
    });
    expect(again.loaded).toMatchObject({
      inserted: 0,
      updated: 0,
      unchanged: 20,
      missingUpstream: 0,
      visitors: { inserted: 0, updated: 0, unchanged: 20, conflicts: 0 },
    });
    expect(again.visitorMerges).toBe(0);
    expect(await versions(source)).toEqual(before);
  });

  it('items stored as they are, a visitor stored older than they show it: that visitor is merged', async () => {
    const source = 'older-visitor';
    await storeWindow(t.pool, windowOf(source, day(DAY)));
    // As a visitor row left behind by an older observation would be (only its own is older).
    await sql`update visitors set name = 'Old', raw = jsonb_set(raw, '{name}', '"Old"'), observed_at = observed_at - interval '1 day'
               where source_id = ${source} and id = 'v-100'`.execute(t.db);
    const again = await storeWindow(t.pool, windowOf(source, day(DAY)));
    expect(again).toMatchObject({ unchanged: 20, visitors: { inserted: 0, updated: 1, unchanged: 19 } });
    const { rows } = await sql<{ id: string; name: string }>`
      select id, name from visitors where source_id = ${source} and name <> 'Ada'`.execute(t.db);
    expect(rows).toEqual([]);
  });

  it('items changed, none new: only a visitor shown more recent than stored is merged', async () => {
    const source = 'changed-items';
    await storeWindow(t.pool, windowOf(source, day(DAY)));
    const merges = (valid: Feedback[]) =>
      inTransaction(t.pool, async (trx) => {
        await trx.query("set local track_functions = 'all'", []);
        const loaded = await loadWindowItems(trx, 'feedback', source, valid, { wholeDay: DAY });
        const { rows } = await trx.query(
          "select pg_stat_get_xact_function_calls('merge_visitors'::regproc) as calls",
          [],
        );
        return { loaded, calls: Number(rows[0]?.calls ?? 0) };
      });
    const comments = day(DAY).map((item) => ({ ...item, comment: `${item.comment}, edited` }));
    const edited = await merges(comments);
    expect(edited.loaded).toMatchObject({
      updated: 20,
      visitors: { inserted: 0, updated: 0, unchanged: 20 },
    });
    expect(edited.calls).toBe(0);
    // At the same instant, the larger observation wins (merge_visitors' own rule): 'Zed' over 'Ada'.
    const renamed = comments.map((item, i) =>
      i === 0 ? { ...item, comment: 'again', visitor: { ...item.visitor, name: 'Zed' } } : item,
    );
    const merged = await merges(renamed);
    expect(merged.loaded).toMatchObject({ updated: 1, visitors: { inserted: 0, updated: 1, unchanged: 19 } });
    expect(merged.calls).toBe(1);
  });

  it('a whole answer of the items stored as they are, but one: the one left out is marked absent', async () => {
    const source = 'one-left-out';
    await storeWindow(t.pool, windowOf(source, day(DAY)));
    const again = await storeWindow(t.pool, windowOf(source, day(DAY).slice(1)));
    expect(again).toMatchObject({ inserted: 0, updated: 0, unchanged: 19 });
    const { rows } = await sql<{ id: string }>`
      select id::text from feedback where source_id = ${source} and absent_since is not null`.execute(t.db);
    expect(rows).toEqual([{ id: '100' }]);
  });

  it("the window's statement counts its items in the inventory's run figures", async () => {
    const source = 'inventory';
    await ensureSourceRow(t, source);
    await sql`insert into schema_drift (source_id, resource, field_path, first_seen_at, first_seen_day,
                                        last_seen_at, last_run_id, last_run_items, last_run_total)
              values (${source}, 'feedback', 'x_extra', now(), ${DAY}, now(), 7, 5, 5)`.execute(t.db);
    await storeWindow(t.pool, windowOf(source, day(DAY), { total: 20 }));
    // Another run (null: outside one): its figures start again.
    expect(await inventory(t, source)).toEqual([
      { last_run_id: null, last_run_items: 0, last_run_total: 20 },
    ]);
    await storeWindow(t.pool, windowOf(source, day(DAY), { total: 20 }));
    expect(await inventory(t, source)).toEqual([
      { last_run_id: null, last_run_items: 0, last_run_total: 40 },
    ]);
  });

  it("a failure of the inventory's update costs a note, not the window", async () => {
    const source = 'inventory-fails';
    await ensureSourceRow(t, source);
    await sql`insert into schema_drift (source_id, resource, field_path, first_seen_at, first_seen_day,
                                        last_seen_at, last_run_id, last_run_items, last_run_total)
              values (${source}, 'feedback', 'x_extra', now(), ${DAY}, now(), 7, 5, 5)`.execute(t.db);
    await sql
      .raw(`
      create function refuse_inventory() returns trigger language plpgsql as $$
        begin raise exception 'inventory refused'; end $$;
      create trigger refuse before update on schema_drift for each row execute function refuse_inventory();`)
      .execute(t.db);
    try {
      const valid = day(DAY);
      const stored = await storeWindow(t.pool, windowOf(source, valid, { total: 20 }));
      expect(stored).toMatchObject({ inserted: 20, driftError: 'inventory refused' });
      const { rows } = await sql<{ status: string }>`
        select status from sync_windows where source_id = ${source}`.execute(t.db);
      expect(rows).toEqual([{ status: 'done' }]);
      const lines: { msg?: string; err?: string }[] = [];
      const log = createLogger({
        level: 'warn',
        pretty: false,
        destination: new Writable({
          write: (chunk: Buffer, _encoding, done) => {
            lines.push(JSON.parse(chunk.toString()));
            done();
          },
        }),
      });
      const ctx = { pool: t.pool, db: t.db, runId: null, now: () => new Date() };
      const drift = windowDrift(ctx, { sourceId: source, resource: 'feedback', day: DAY, valid });
      await noteWindowDrift(ctx, log, drift, stored);
      expect(lines).toMatchObject([
        { msg: 'could not update the inventory of unknown fields (schema_drift)', err: 'inventory refused' },
      ]);
    } finally {
      await sql`drop trigger refuse on schema_drift`.execute(t.db);
      await sql`drop function refuse_inventory()`.execute(t.db);
    }
  });
});

async function definitions(t: TestDatabase) {
  const { rows } = await sql<{ name: string; def: string; acl: string | null }>`
    select p.proname as name, pg_get_functiondef(p.oid) as def, p.proacl::text as acl
      from pg_proc p
      join pg_namespace n on n.oid = p.pronamespace
     where n.nspname = ${bookkeepingSchema(t.schema)} and p.proname = 'store_window'`.execute(t.db);
  return [...(await mergeFunctionDefinitions(t)), ...rows];
}

async function ensureSourceRow(t: TestDatabase, source: string): Promise<void> {
  await inTransaction(t.pool, (trx) => ensureSource(trx, source, BASE_URL));
}

async function inventory(t: TestDatabase, source: string) {
  return (
    await sql<{ last_run_id: string | null; last_run_items: number; last_run_total: number }>`
      select last_run_id, last_run_items, last_run_total from schema_drift
       where source_id = ${source} and resource = 'feedback'`.execute(t.db)
  ).rows;
}
