import { randomBytes } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as valueRanges from '../../migrations/0009-value-ranges.js';
import type { Database } from '../../src/db/database.js';
import { inTransaction } from '../../src/db/transaction.js';
import { validateItems } from '../../src/extract/validate.js';
import { loadRejects } from '../../src/load/rejects.js';
import { feedbackSchema } from '../../src/schemas/feedback.js';
import { feedback } from '../helpers/api-items.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

/**
 * Migration 0009-value-ranges and the rejects it makes storable, on a real PostgreSQL: the
 * widened columns hold what int4 could not, the views that read them came back as they were, and
 * a reject holding U+0000 is stored instead of failing its transaction.
 */

const SOURCE = 'main';
const INT4_OVERFLOW = 2_147_483_648;

describe('migration 0009-value-ranges', () => {
  let t: TestDatabase;

  beforeAll(async () => {
    t = await createTestDatabase();
    await t.db.insertInto('sources').values({ source_id: SOURCE, base_url: 'http://127.0.0.1:1' }).execute();
  });
  afterAll(() => t.drop());

  it('makes rating, duration and heatmap_limit bigint, and the view feedback_enriched with them', async () => {
    expect(await columnTypes()).toEqual({
      'feedback.rating': 'bigint',
      'recordings.duration': 'bigint',
      'heatmaps.heatmap_limit': 'bigint',
      'feedback_enriched.rating': 'bigint',
    });
  });

  it('stores 2147483648 and 2^53 - 1 in each widened column and reads them back as numbers', async () => {
    const raw = JSON.stringify({});
    const dt = '2026-03-02T10:00:00.000Z';
    await t.db
      .insertInto('feedback')
      .values({ source_id: SOURCE, id: 1, feedback_id: 1, rating: INT4_OVERFLOW, dt, raw })
      .execute();
    await t.db
      .insertInto('recordings')
      .values({
        source_id: SOURCE,
        id: 'r1',
        duration: Number.MAX_SAFE_INTEGER,
        landing_page: '',
        referral: '',
        country: '',
        city: '',
        user_ip: null,
        user_agent: null,
        dt,
        video_link: '',
        raw,
      })
      .execute();
    await t.db
      .insertInto('heatmaps')
      .values({
        source_id: SOURCE,
        id: 'h1',
        name: '',
        url: '',
        rule: '',
        start_time: dt,
        end_time: null,
        heatmap_limit: INT4_OVERFLOW,
        created_at: dt,
        updated_at: dt,
        raw,
      })
      .execute();

    const stored = await t.db.selectFrom('feedback').select('rating').executeTakeFirstOrThrow();
    expect(stored.rating).toBe(INT4_OVERFLOW);
    const recording = await t.db.selectFrom('recordings').select('duration').executeTakeFirstOrThrow();
    expect(recording.duration).toBe(Number.MAX_SAFE_INTEGER);
    const heatmap = await t.db.selectFrom('heatmaps').select('heatmap_limit').executeTakeFirstOrThrow();
    expect(heatmap.heatmap_limit).toBe(INT4_OVERFLOW);

    // Through the recreated views too.
    const enriched = await t.db.selectFrom('feedback_enriched').select('rating').executeTakeFirstOrThrow();
    expect(enriched.rating).toBe(INT4_OVERFLOW);
    const daily = await t.db
      .selectFrom('daily_activity')
      .select(['average_rating', 'average_recording_duration'])
      .executeTakeFirstOrThrow();
    expect(daily).toEqual({
      average_rating: INT4_OVERFLOW,
      average_recording_duration: Number.MAX_SAFE_INTEGER,
    });
  });

  it('recreated the views with the comments 0004 gave them', async () => {
    expect(await viewComments(t.db)).toEqual([
      { view: 'daily_activity', commented: true, columns_without_comment: 0 },
      { view: 'feedback_enriched', commented: true, columns_without_comment: 0 },
    ]);
  });

  it('down refuses while a row holds more than an integer, and changes nothing', async () => {
    await expect(t.db.transaction().execute((trx) => valueRanges.down(trx))).rejects.toThrow(
      /integer out of range/,
    );
    expect(await columnTypes()).toMatchObject({
      'feedback.rating': 'bigint',
      'feedback_enriched.rating': 'bigint',
    });
  });

  it('down and up again keep each view as it was: definition, comments and grants', async () => {
    const role = `insights_vr_${randomBytes(4).toString('hex')}`;
    const before = await viewDefinition(t.db);
    // One transaction, rolled back at the end: the role and every change go with it.
    const rolledBack = t.db.transaction().execute(async (trx) => {
      await trx.deleteFrom('feedback').execute();
      await trx.deleteFrom('recordings').execute();
      await trx.deleteFrom('heatmaps').execute();
      await sql`create role ${sql.id(role)} nologin`.execute(trx);
      await sql`grant select on feedback_enriched to ${sql.id(role)}`.execute(trx);
      const granted = async () =>
        (
          await sql<{
            ok: boolean;
          }>`select has_table_privilege(${role}, 'feedback_enriched', 'select') as ok`.execute(trx)
        ).rows[0]?.ok;

      await valueRanges.down(trx);
      expect(await columnTypes(trx)).toEqual({
        'feedback.rating': 'integer',
        'recordings.duration': 'integer',
        'heatmaps.heatmap_limit': 'integer',
        'feedback_enriched.rating': 'integer',
      });
      expect(await granted()).toBe(true);

      await valueRanges.up(trx);
      expect(await columnTypes(trx)).toMatchObject({ 'feedback_enriched.rating': 'bigint' });
      expect(await granted()).toBe(true);
      expect(await viewDefinition(trx)).toBe(before);
      expect(await viewComments(trx)).toEqual(await viewComments(t.db));
      throw new RollbackForTest();
    });
    await expect(rolledBack).rejects.toBeInstanceOf(RollbackForTest);
  });

  async function columnTypes(db: Kysely<Database> = t.db): Promise<Record<string, string>> {
    const rows = await sql<{ name: string; type: string }>`
      select table_name || '.' || column_name as name, data_type as type
        from information_schema.columns
       where table_schema = ${t.schema}
         and (table_name, column_name) in (('feedback', 'rating'), ('recordings', 'duration'),
              ('heatmaps', 'heatmap_limit'), ('feedback_enriched', 'rating'))`.execute(db);
    return Object.fromEntries(rows.rows.map((r) => [r.name, r.type]));
  }
});

async function viewDefinition(db: Kysely<Database>): Promise<string | undefined> {
  const row = await sql<{ d: string }>`select pg_get_viewdef('feedback_enriched'::regclass) as d`.execute(db);
  return row.rows[0]?.d;
}

async function viewComments(db: Kysely<Database>) {
  const rows = await sql<{ view: string; commented: boolean; columns_without_comment: number }>`
    select c.relname as view, obj_description(c.oid, 'pg_class') is not null as commented,
           (select count(*)::int from pg_attribute a
             where a.attrelid = c.oid and a.attnum > 0 and col_description(c.oid, a.attnum) is null)
             as columns_without_comment
      from pg_class c
     where c.relnamespace = current_schema()::regnamespace and c.relname in ('feedback_enriched', 'daily_activity')
     order by 1`.execute(db);
  return rows.rows;
}

class RollbackForTest extends Error {}

describe('rejects PostgreSQL could not hold as they came', () => {
  let t: TestDatabase;

  beforeAll(async () => {
    t = await createTestDatabase();
    await t.db.insertInto('sources').values({ source_id: SOURCE, base_url: 'http://127.0.0.1:1' }).execute();
  });
  afterAll(() => t.drop());

  const context = { sourceId: SOURCE, resource: 'feedback', day: '2026-03-02', runId: null };

  it('stores a reject holding U+0000 with U+FFFD in its copy, says so, and stores it once', async () => {
    const bad = { ...feedback(), comment: 'fine\u0000print', 'x\u0000key': '\uD800' };
    const { rejected } = validateItems(feedbackSchema, [bad, feedback()]);
    expect(rejected).toHaveLength(1);
    const stored = await inTransaction(t.pool, (trx) => loadRejects(trx, context, rejected));
    expect(stored).toBe(1);
    const again = await inTransaction(t.pool, (trx) => loadRejects(trx, context, rejected));
    expect(again).toBe(0);

    const row = await t.db.selectFrom('rejects').select(['item', 'error']).executeTakeFirstOrThrow();
    expect(row.item).toMatchObject({ comment: 'fine\uFFFDprint', 'x\uFFFDkey': '\uFFFD' });
    expect(row.error).toBe(
      'comment: contains U+0000, which PostgreSQL text cannot hold; ' +
        'x\uFFFDkey (a key): contains U+0000, which PostgreSQL jsonb cannot hold; ' +
        'x\uFFFDkey: contains an unpaired UTF-16 surrogate, which PostgreSQL text cannot hold ' +
        '(stored copy: U+0000 and unpaired surrogates shown as U+FFFD)',
    );
  });

  it('stores a reject nested 100,000 levels deep, cut, and an error holding U+0000', async () => {
    let deep: unknown = 'end';
    for (let i = 0; i < 100_000; i++) deep = { a: deep };
    const stored = await inTransaction(t.pool, (trx) =>
      loadRejects(trx, { ...context, resource: 'survey' }, [{ item: deep, error: 'a\u0000: deep' }]),
    );
    expect(stored).toBe(1);
    const row = await t.db
      .selectFrom('rejects')
      .select('error')
      .where('resource', '=', 'survey')
      .executeTakeFirstOrThrow();
    expect(row.error).toBe('a\uFFFD: deep (stored copy: nesting below 64 levels cut)');
  });

  it('stores 12,000 distinct rejects of one day (past the 65,535 parameters a statement of tuples holds)', async () => {
    const many = Array.from({ length: 12_000 }, (_, i) => ({ item: { i }, error: 'id: Invalid input' }));
    const stored = await inTransaction(t.pool, (trx) =>
      loadRejects(trx, { ...context, resource: 'recordings' }, many),
    );
    expect(stored).toBe(12_000);
  });
});
