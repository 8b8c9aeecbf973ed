import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadDayMarks, truncatedDetail } from '../../src/report/report-data.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

/**
 * A truncated day's "why" names what reached the server's cap: the items the response returned,
 * valid or not. A cap of 200 with 3 invalid items stores 197; "197 items, as many as one response
 * returns" was untrue.
 */
describe('a truncated day in the report', () => {
  it('counts what the response returned, and says how many were stored and how many were invalid', () => {
    expect(truncatedDetail({ served: 200, stored: 197, rejected: 3 })).toBe(
      'a response returned 200 items, as many as one returns: items may be missing (197 stored, 3 invalid)',
    );
    expect(truncatedDetail({ served: 200, stored: 200, rejected: 0 })).toBe(
      'a response returned 200 items, as many as one returns: items may be missing (200 stored)',
    );
    // A window recorded before the ledger kept the response's count: the day's valid and invalid items.
    expect(truncatedDetail({ served: null, stored: 197, rejected: 3 })).toBe(
      'a response returned 200 items, as many as one returns: items may be missing (197 stored, 3 invalid)',
    );
  });

  describe('read from the ledger', () => {
    let t: TestDatabase;
    const day = '2026-03-02';

    beforeAll(async () => {
      t = await createTestDatabase();
      await sql`insert into sources (source_id, base_url) values ('shop', 'https://api.example.com')`.execute(
        t.db,
      );
      await sql`insert into sync_windows (source_id, resource, day, status, item_count, requested_limit,
                                          served_count, truncated, rejected_count)
                values ('shop', 'feedback', ${day}, 'done', 197, 200, 200, true, 3),
                       ('shop', 'survey', ${day}, 'done', 50, 200, 50, false, 0),
                       ('shop', 'recordings', ${day}, 'done', 120, 120, null, true, 0)`.execute(t.db);
    });
    afterAll(async () => {
      await t.drop();
    });

    it('says 200 for a response of 200 of which 3 were invalid', async () => {
      const marks = await loadDayMarks(t.db, ['shop'], day, day, new Date('2026-03-05T00:00:00Z'));
      expect(marks).toEqual([
        {
          source: 'shop',
          resource: 'feedback',
          day,
          status: 'truncated',
          detail:
            'a response returned 200 items, as many as one returns: items may be missing (197 stored, 3 invalid)',
        },
        {
          source: 'shop',
          resource: 'recordings',
          day,
          status: 'truncated',
          detail: 'a response returned 120 items, as many as one returns: items may be missing (120 stored)',
        },
      ]);
    });
  });
});
