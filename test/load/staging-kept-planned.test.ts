import { sql } from 'kysely';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool } from '../../src/db/connection.js';
import type { Feedback } from '../../src/schemas/feedback.js';
import { storeWindow } from '../../src/sync/store-window.js';
import type { DayString } from '../../src/time/days.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { mergeFunctionDefinitions, testMigrator } from '../helpers/merge-migrations.js';
import { feedbackItem } from './window-items.js';

/**
 * The window merge's staging table is emptied by the merge, not truncated at each commit: a
 * truncation told every backend the table changed, and the merge's statements were planned again
 * on every window (migration 0045). Its dead rows are bounded: past 1 MB the next merge
 * truncates it. No staged item outlives its window's statement.
 */
const DAY = '2026-04-02' as DayString;
const STAGE_BYTES = 1_048_576;

describe("a connection's staging table across windows", () => {
  let t: TestDatabase;
  // One connection: the staging table is the connection's own.
  let pool: pg.Pool;

  beforeAll(async () => {
    t = await createTestDatabase();
    pool = createPool({ url: t.url, schema: t.schema, max: 1 });
  });
  afterAll(async () => {
    await pool.end();
    await t.drop();
  });

  const store = (items: Feedback[]) =>
    storeWindow(pool, {
      sourceId: 'staging',
      baseUrl: 'http://api.example.test',
      resource: 'feedback',
      day: DAY,
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
  const stage = async () => {
    const { rows } = await pool.query<{ bytes: string; rows: number }>(
      `select pg_relation_size('pg_temp.window_feedback')::text as bytes,
              (select count(*)::int from pg_temp.window_feedback) as rows`,
    );
    return { bytes: Number(rows[0]?.bytes), rows: rows[0]?.rows };
  };
  const items = (from: number, count: number, comment?: (id: number) => string) =>
    Array.from({ length: count }, (_, i) => feedbackItem(DAY, from + i, comment?.(from + i)));

  it('keeps its pages past the commit (never truncated there), holding no row', async () => {
    expect(await store(items(1, 3))).toMatchObject({ inserted: 3 });
    const after = await stage();
    expect(after.rows).toBe(0);
    expect(after.bytes).toBeGreaterThan(0);
    expect(await store(items(1, 4))).toMatchObject({ inserted: 1, unchanged: 3 });
    expect((await stage()).rows).toBe(0);
  });

  it('is truncated by the next window once past 1 MB, and the windows stored as ever', async () => {
    const long = (id: number) => `${'long comment '.repeat(80)}${id}`;
    expect(await store(items(100, 1000, long))).toMatchObject({ inserted: 1000 });
    expect((await stage()).bytes).toBeGreaterThan(STAGE_BYTES);
    expect(await store(items(100, 2, long))).toMatchObject({ unchanged: 2 });
    const after = await stage();
    expect(after.rows).toBe(0);
    expect(after.bytes).toBeLessThan(STAGE_BYTES);
    const { rows } = await sql<{ n: number }>`
      select count(*)::int as n from feedback where source_id = 'staging' and absent_since is null`.execute(
      t.db,
    );
    expect(rows[0]?.n).toBe(2);
  });
});

describe('migration 0045 keeps the staging tables past commit, and back', () => {
  let t: TestDatabase;

  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(() => t.drop());

  const definitions = () => mergeFunctionDefinitions(t);

  it('down gives back ON COMMIT DELETE ROWS, up the merge that empties its table, rights and settings kept', async () => {
    const migrator = testMigrator(t);
    const latest = await definitions();
    expect(latest).toHaveLength(3);
    for (const { name, def } of latest) expect(def, name).not.toMatch(/on commit delete rows/);
    expect((await migrator.migrateTo('0044-window-merge-passes')).error).toBeUndefined();
    for (const { name, def } of await definitions()) expect(def, name).toMatch(/on commit delete rows/);
    expect((await migrator.migrateToLatest()).error).toBeUndefined();
    expect(await definitions()).toEqual(latest);
  });
});
