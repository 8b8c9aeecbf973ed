import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Rejected } from '../../src/schemas/rejected.js';
import { storeWindow } from '../../src/sync/store-window.js';
import type { DayString } from '../../src/time/days.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { feedbackItem } from './window-items.js';

/**
 * Serving an item proves it exists: a read of its day that is not whole (truncated, or holding a
 * rejected item) cannot show that an item left the day, but the items it does serve are there.
 * Such a read clears absent_since and missing_upstream_since of the rows it serves, and they are
 * back in feedback_enriched; a row it does not serve keeps its marks.
 */
const DAY = '2026-03-02' as DayString;
const BROKEN: Rejected = { item: { id: 'x' }, error: 'id: Invalid input', problems: ['id: Invalid input'] };

describe.each([
  { read: 'truncated', truncated: true, rejected: [] as Rejected[] },
  { read: 'holding a rejected item', truncated: false, rejected: [BROKEN] },
])('a read $read that serves a row marked absent and missing upstream', ({ truncated, rejected }) => {
  let t: TestDatabase;
  const source = 'marks';

  const store = (ids: number[], read: { truncated: boolean; rejected: Rejected[] }) => {
    const valid = ids.map((id) => feedbackItem(DAY, id));
    return storeWindow(t.pool, {
      sourceId: source,
      baseUrl: 'http://api.example.test',
      resource: 'feedback',
      day: DAY,
      status: 'done',
      valid,
      rejected: read.rejected,
      requestedLimit: 1000,
      servedCount: valid.length + read.rejected.length,
      truncated: read.truncated,
      runId: null,
      startDay: '2026-03-01' as DayString,
      today: '2026-03-10' as DayString,
    });
  };
  const marks = async () =>
    (
      await sql<{ id: string; absent: boolean; missing: boolean; shown: boolean }>`
        select f.id::text as id, f.absent_since is not null as absent, f.missing_upstream_since is not null as missing,
               exists (select 1 from feedback_enriched e where e.source_id = f.source_id and e.id = f.id
                          and e.feedback_id = f.feedback_id) as shown
          from feedback f where f.source_id = ${source} order by f.id`.execute(t.db)
    ).rows;

  beforeAll(async () => {
    t = await createTestDatabase();
    const whole = { truncated: false, rejected: [] };
    await store([1, 2, 3, 4, 5], whole);
    // Items 4 and 5 lacked by two whole reads in a row: absent, then missing upstream.
    await store([1, 2, 3], whole);
    await store([1, 2, 3], whole);
  });
  afterAll(() => t.drop());

  it('the marks are there before: both rows left out of feedback_enriched', async () => {
    expect((await marks()).filter((r) => r.absent || r.missing)).toEqual([
      { id: '4', absent: true, missing: true, shown: false },
      { id: '5', absent: true, missing: true, shown: false },
    ]);
  });

  it('clears both marks of the row it serves, which is back in feedback_enriched; the row it lacks keeps them', async () => {
    const loaded = await store([1, 2, 4], { truncated, rejected });
    expect(loaded.missingUpstream).toBe(0);
    expect(await marks()).toEqual([
      { id: '1', absent: false, missing: false, shown: true },
      { id: '2', absent: false, missing: false, shown: true },
      { id: '3', absent: false, missing: false, shown: true },
      { id: '4', absent: false, missing: false, shown: true },
      // Not whole: no evidence either way for item 5, its marks stay as they were.
      { id: '5', absent: true, missing: true, shown: false },
    ]);
  });
});
