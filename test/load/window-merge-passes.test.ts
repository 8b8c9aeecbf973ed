import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inTransaction } from '../../src/db/transaction.js';
import { ensureSource } from '../../src/load/sources.js';
import { loadWindowItems } from '../../src/load/windowed.js';
import type { Feedback } from '../../src/schemas/feedback.js';
import { storeWindow } from '../../src/sync/store-window.js';
import type { DayString } from '../../src/time/days.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { mergeFunctionDefinitions, testMigrator } from '../helpers/merge-migrations.js';
import { visitor } from '../webhooks/webhook-helpers.js';
import { feedbackItem } from './window-items.js';

/**
 * The window merge takes shortcuts for the usual answer (migration 0044): a plain staging when no
 * key repeats, no clearing of marks when every row is new, no cross-day set-aside when every row
 * was written, the visitors counted in the pass that merges them. An answer off the usual one
 * must come out as the full merge made it: a key's best copy stored, its other copies counted,
 * a forgotten visitor's copy passed over for the next, the marks of a served row cleared, the
 * earlier day's version of a key set aside.
 */
const DAY = '2026-04-02' as DayString;
const BASE_URL = 'http://api.example.test';

describe('a window off the usual answer', () => {
  let t: TestDatabase;

  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(() => t.drop());

  const load = (source: string, items: Feedback[]) =>
    inTransaction(t.pool, async (trx) => {
      await ensureSource(trx, source, BASE_URL);
      return loadWindowItems(trx, 'feedback', source, items);
    });
  const comments = async (source: string) =>
    (
      await sql<{ id: string; comment: string }>`
        select id::text as id, comment from feedback where source_id = ${source} order by id`.execute(t.db)
    ).rows;

  it('repeated keys: the best copy stored once, identical copies duplicates, differing ones a conflict', async () => {
    const items = [
      feedbackItem(DAY, 1, 'a'),
      feedbackItem(DAY, 2),
      feedbackItem(DAY, 1, 'b'),
      feedbackItem(DAY, 2),
      feedbackItem(DAY, 3),
    ];
    const loaded = await load('repeats', items);
    expect(loaded).toMatchObject({ inserted: 3, duplicates: 2, conflicts: 1, suppressed: 0 });
    // dedupeByKey's choice: the copy whose canonical JSON sorts last ('b' after 'a').
    expect(await comments('repeats')).toEqual([
      { id: '1', comment: 'b' },
      { id: '2', comment: 'comment 2' },
      { id: '3', comment: 'comment 3' },
    ]);
    expect(loaded.visitors).toMatchObject({ inserted: 3, conflicts: 0 });
  });

  it("a forgotten visitor's copy is passed over for the key's next copy, and counted as suppressed", async () => {
    const source = 'forgotten-copy';
    const forgotten = { ...feedbackItem(DAY, 1, 'b'), visitor: visitor('v-gone') };
    await inTransaction(t.pool, (trx) => ensureSource(trx, source, BASE_URL));
    await sql`insert into suppressed_visitors (source_id, visitor_id, hashed)
              values (${source}, 'v-gone', false)`.execute(t.db);
    const loaded = await load(source, [forgotten, feedbackItem(DAY, 1, 'a'), feedbackItem(DAY, 2)]);
    expect(loaded).toMatchObject({ inserted: 2, duplicates: 0, conflicts: 0, suppressed: 1 });
    expect(await comments(source)).toEqual([
      { id: '1', comment: 'a' },
      { id: '2', comment: 'comment 2' },
    ]);
    const { rows } = await sql<{ id: string }>`
      select id from visitors where source_id = ${source} order by id`.execute(t.db);
    expect(rows.map((r) => r.id)).toEqual(['v-1', 'v-2']);
  });

  it('visitors with differing copies in one window are counted once each', async () => {
    const source = 'visitor-copies';
    const items = [1, 2, 3, 4].map((id) => ({
      ...feedbackItem(DAY, id),
      visitor: { ...visitor(id <= 2 ? 'v-a' : 'v-b'), device: id === 1 ? 'phone' : 'desktop' },
    }));
    const loaded = await load(source, items);
    expect(loaded.visitors).toEqual({ inserted: 2, updated: 0, unchanged: 0, conflicts: 1 });
    expect((await load(source, items)).visitors).toEqual({
      inserted: 0,
      updated: 0,
      unchanged: 2,
      conflicts: 1,
    });
  });

  const store = (source: string, items: Feedback[], day = DAY) =>
    storeWindow(t.pool, {
      sourceId: source,
      baseUrl: BASE_URL,
      resource: 'feedback',
      day,
      status: 'done',
      valid: items,
      rejected: [],
      requestedLimit: 1000,
      servedCount: items.length,
      truncated: false,
      runId: null,
      startDay: '2026-04-01' as DayString,
      today: '2026-04-10' as DayString,
    });

  it('a whole read serving a marked row among new ones clears its marks', async () => {
    const source = 'marks-and-new';
    await store(source, [feedbackItem(DAY, 1), feedbackItem(DAY, 2)]);
    await store(source, [feedbackItem(DAY, 1)]);
    const marked = await sql<{ absent: boolean }>`
      select absent_since is not null as absent from feedback where source_id = ${source} and id = 2`.execute(
      t.db,
    );
    expect(marked.rows).toEqual([{ absent: true }]);
    const loaded = await store(source, [feedbackItem(DAY, 1), feedbackItem(DAY, 2), feedbackItem(DAY, 3)]);
    expect(loaded).toMatchObject({ inserted: 1, unchanged: 2 });
    const { rows } = await sql<{ id: string; absent: boolean }>`
      select id::text as id, absent_since is not null as absent from feedback
       where source_id = ${source} order by id`.execute(t.db);
    expect(rows).toEqual([
      { id: '1', absent: false },
      { id: '2', absent: false },
      { id: '3', absent: false },
    ]);
  });

  it("an earlier day's version of a key is set aside when it comes with new rows", async () => {
    const source = 'loser-among-new';
    const later = '2026-04-03' as DayString;
    await store(source, [feedbackItem(later, 1, 'later')], later);
    const loaded = await store(source, [feedbackItem(DAY, 1, 'earlier'), feedbackItem(DAY, 2)]);
    expect(loaded).toMatchObject({ inserted: 1, withheld: 1, collisions: 1 });
    expect(await comments(source)).toEqual([
      { id: '1', comment: 'later' },
      { id: '2', comment: 'comment 2' },
    ]);
  });
});

describe('migration 0044 replaces the merge statements, and back', () => {
  let t: TestDatabase;

  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(() => t.drop());

  const definitions = () => mergeFunctionDefinitions(t);

  it('down gives back the statements of 0041 and 0043, up the same ones again, rights and settings kept', async () => {
    const migrator = testMigrator(t);
    const latest = await definitions();
    expect(latest.map((r) => r.name)).toEqual([
      'merge_window_feedback',
      'merge_window_recordings',
      'merge_window_survey_answers',
    ]);
    for (const { name, def } of latest) expect(def, name).not.toMatch(/\* from kept order by/);
    expect((await migrator.migrateTo('0043-visitor-merge-function')).error).toBeUndefined();
    const before = await definitions();
    for (const { name, def } of before) expect(def, name).toMatch(/\* from kept order by/);
    expect((await migrator.migrateToLatest()).error).toBeUndefined();
    expect(await definitions()).toEqual(latest);
  });
});
