import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as supersededByReject from '../../migrations/0038-superseded-by-reject.js';
import { rejectedKeys } from '../../src/load/superseded-rows.js';
import { windowedSpec } from '../../src/load/windowed.js';
import type { Feedback } from '../../src/schemas/feedback.js';
import type { Rejected } from '../../src/schemas/rejected.js';
import { storeWindow } from '../../src/sync/store-window.js';
import type { DayString } from '../../src/time/days.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { feedbackItem } from './window-items.js';

/**
 * A newer version of a stored item that fails validation goes to rejects and leaves the old row
 * current: the row is marked superseded_by_reject_at (stale), shown in feedback_enriched, until a
 * read serves a valid version again.
 */
const DAY = '2026-03-02' as DayString;
const NEXT = '2026-03-03' as DayString;

const refused = (item: Feedback): Rejected => ({
  item: { ...item, rating: 'five' },
  error: 'rating: Invalid input: expected number, received string',
  problems: ['rating: Invalid input: expected number, received string'],
});

describe('rejectedKeys', () => {
  it('reads each key column as an integer or digits, and leaves out an item whose key is unreadable', () => {
    const spec = windowedSpec('feedback');
    expect(
      rejectedKeys(spec, [
        { item: { id: 5, feedback_id: 1 }, error: '' },
        { item: { id: '6', feedback_id: 2 }, error: '' },
        { item: { id: 7 }, error: '' },
        { item: { id: 1.5, feedback_id: 1 }, error: '' },
        { item: { id: 'x', feedback_id: 1 }, error: '' },
        { item: [5, 1], error: '' },
        { item: null, error: '' },
      ]),
    ).toEqual([
      ['5', '6'],
      ['1', '2'],
    ]);
    expect(rejectedKeys(windowedSpec('recordings'), [{ item: { id: 9 }, error: '' }])).toEqual([['9']]);
  });
});

describe('a stored item whose newer version is refused', () => {
  let t: TestDatabase;
  const source = 'stale';

  const store = (day: DayString, valid: Feedback[], rejected: Rejected[] = []) =>
    storeWindow(t.pool, {
      sourceId: source,
      baseUrl: 'http://api.example.test',
      resource: 'feedback',
      day,
      status: 'done',
      valid,
      rejected,
      requestedLimit: 1000,
      servedCount: valid.length + rejected.length,
      truncated: false,
      runId: null,
      startDay: '2026-03-01' as DayString,
      today: '2026-03-10' as DayString,
    });
  const rows = async () =>
    (
      await sql<{ id: string; comment: string; marked: Date | null; shown: Date | null }>`
        select f.id::text as id, f.comment, f.superseded_by_reject_at as marked, e.superseded_by_reject_at as shown
          from feedback f
          join feedback_enriched e on e.source_id = f.source_id and e.id = f.id and e.feedback_id = f.feedback_id
         where f.source_id = ${source} order by f.id`.execute(t.db)
    ).rows;

  beforeAll(async () => {
    t = await createTestDatabase();
    await store(
      DAY,
      [1, 2, 3].map((id) => feedbackItem(DAY, id)),
    );
  });
  afterAll(() => t.drop());

  let markedAt: Date | null = null;

  it('marks the row stale, in the table and in feedback_enriched, and keeps its last valid content', async () => {
    await store(DAY, [feedbackItem(DAY, 1), feedbackItem(DAY, 3)], [refused(feedbackItem(DAY, 2, 'edited'))]);
    // The same key refused on another day may be another item: no mark for row 1.
    await store(NEXT, [feedbackItem(NEXT, 10)], [refused(feedbackItem(NEXT, 1, 'other day'))]);
    const after = await rows();
    expect(after.map((r) => [r.id, r.comment, r.marked !== null])).toEqual([
      ['1', 'comment 1', false],
      ['2', 'comment 2', true],
      ['3', 'comment 3', false],
      ['10', 'comment 10', false],
    ]);
    markedAt = after[1]?.marked ?? null;
    expect(after[1]?.shown).toEqual(markedAt);
  });

  it('keeps the time of the first refusal while the service still serves an invalid version', async () => {
    await store(DAY, [feedbackItem(DAY, 1), feedbackItem(DAY, 3)], [refused(feedbackItem(DAY, 2, 'again'))]);
    expect((await rows())[1]?.marked).toEqual(markedAt);
  });

  it('clears the mark once a valid newer version is stored', async () => {
    await store(DAY, [feedbackItem(DAY, 1), feedbackItem(DAY, 2, 'edited'), feedbackItem(DAY, 3)]);
    expect((await rows()).map((r) => [r.id, r.comment, r.marked, r.shown])).toEqual([
      ['1', 'comment 1', null, null],
      ['2', 'edited', null, null],
      ['3', 'comment 3', null, null],
      ['10', 'comment 10', null, null],
    ]);
  });
});

class RollbackForTest extends Error {}

describe('migration 0038-superseded-by-reject', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(() => t.drop());

  const VIEWS = ['feedback_enriched', 'survey_answers_enriched', 'missing_upstream'];
  const state = (db: typeof t.db) =>
    sql<{ relation: string; columns: string; comments: string; definition: string }>`
      select c.relname as relation,
             string_agg(a.attname, ',' order by a.attnum) as columns,
             string_agg(coalesce(col_description(c.oid, a.attnum), '-'), '|' order by a.attnum)
               || '|' || coalesce(obj_description(c.oid, 'pg_class'), '-') as comments,
             coalesce(pg_get_viewdef(c.oid), '') as definition
        from pg_class c join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
       where c.relnamespace = current_schema()::regnamespace
         and c.relname = any(${[...VIEWS, 'feedback', 'survey_answers', 'recordings']})
       group by c.oid, c.relname order by c.relname`.execute(db);

  it('down takes the column off the tables and the views, keeping their comments and grants; up puts it back', async () => {
    const role = `insights_sr_${randomBytes(4).toString('hex')}`;
    const before = (await state(t.db)).rows;
    expect(
      before.filter((r) => r.columns.endsWith('superseded_by_reject_at')).map((r) => r.relation),
    ).toEqual([
      'feedback',
      'feedback_enriched',
      'missing_upstream',
      'recordings',
      'survey_answers',
      'survey_answers_enriched',
    ]);
    const rolledBack = t.db.transaction().execute(async (trx) => {
      await sql`create role ${sql.id(role)} nologin`.execute(trx);
      for (const view of VIEWS) await sql`grant select on ${sql.id(view)} to ${sql.id(role)}`.execute(trx);
      const granted = async () =>
        (
          await sql<{ n: number }>`
            select count(*)::int as n from unnest(${VIEWS}::text[]) v
             where has_table_privilege(${role}, v, 'select')`.execute(trx)
        ).rows[0]?.n;

      await supersededByReject.down(trx);
      const down = (await state(trx)).rows;
      expect(down.filter((r) => r.columns.includes('superseded_by_reject_at'))).toEqual([]);
      expect(down.filter((r) => r.comments.split('|').includes('-')).map((r) => r.relation)).toEqual([]);
      expect(await granted()).toBe(VIEWS.length);

      await supersededByReject.up(trx);
      expect((await state(trx)).rows).toEqual(before);
      expect(await granted()).toBe(VIEWS.length);
      throw new RollbackForTest();
    });
    await expect(rolledBack).rejects.toBeInstanceOf(RollbackForTest);
  });
});
