import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as reopenedReadAgain from '../../migrations/0054-reopened-read-again.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

class RollbackForTest extends Error {}

/** The comments of sync_windows.reopened_at and day_completeness.reopened_at, as an analyst reads them. */
async function comments(db: TestDatabase['db']): Promise<string[]> {
  const { rows } = await sql<{ comment: string | null }>`
    select col_description(c.oid, a.attnum) as comment
      from pg_attribute a join pg_class c on c.oid = a.attrelid
     where c.oid in (to_regclass('sync_windows'), to_regclass('day_completeness')) and a.attname = 'reopened_at'
     order by c.relname`.execute(db);
  return rows.map((row) => row.comment ?? '');
}

describe('migration 0054-reopened-read-again', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(() => t.drop());

  it("names every cause of a reopened day in both columns' comments; down puts back the proof's alone", async () => {
    const now = await comments(t.db);
    expect(now).toHaveLength(2);
    for (const comment of now) {
      expect(comment).toContain('a proof found the server reading it was settled under stale');
      expect(comment).toContain('flagged truncated while the server changed how it answers');
      expect(comment).toContain('its answer lacked items the same run was served of it by another answer');
    }
    await expect(
      t.db.transaction().execute(async (trx) => {
        await reopenedReadAgain.down(trx);
        const down = await comments(trx);
        for (const comment of down) expect(comment).not.toContain('flagged truncated');
        expect(down.every((comment) => comment.startsWith('When a proof found'))).toBe(true);
        await reopenedReadAgain.up(trx);
        expect(await comments(trx)).toEqual(now);
        throw new RollbackForTest();
      }),
    ).rejects.toBeInstanceOf(RollbackForTest);
  });
});
