/**
 * The window's merge runs in functions of the owner (migrations 0041, 0043): the sync role writes
 * a window through them with its own rights, and no other role of docs/roles.sql may run them.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bookkeepingSchema } from '../../src/db/bookkeeping.js';
import type { Feedback } from '../../src/schemas/feedback.js';
import { storeWindow } from '../../src/sync/store-window.js';
import type { DayString } from '../../src/time/days.js';
import { receiveDeliveries } from '../../src/webhooks/receive-batch.js';
import { createRolesDatabase, type RolesDatabase, SCHEMA } from '../reliability/warehouse-roles.js';
import { feedbackBody, visitor } from '../webhooks/webhook-helpers.js';

const FUNCTIONS = [
  'store_window',
  'merge_window_feedback',
  'merge_window_survey_answers',
  'merge_window_recordings',
  // The one visitor merge the window's functions call (migration 0043).
  'merge_visitors',
];
const DAY = '2026-03-02' as DayString;

const item = (id: number): Feedback => ({
  id,
  feedback_id: 1,
  question: 'How was your visit?',
  session: `s-${id}`,
  comment: `comment ${id}`,
  rating: 4,
  rating_text: 'good',
  dt: `${DAY}T10:00:0${id}.000Z`,
  url: 'https://shop.example.test/',
  screenshot: `https://cdn.example.test/${id}.png`,
  visitor: visitor(`v-${id}`),
});

describe('who may run the window merge', () => {
  let roles: RolesDatabase;

  beforeAll(async () => {
    roles = await createRolesDatabase();
  }, 120_000);
  afterAll(async () => {
    await roles?.drop();
  });

  it("the functions are the owner's, SECURITY INVOKER, search_path pinned", async () => {
    const { rows } = await sql<{ name: string; owner: string; definer: boolean; config: string[] | null }>`
      select p.proname as name, p.proowner::regrole::text as owner, p.prosecdef as definer, p.proconfig as config
        from pg_proc p join pg_namespace n on n.oid = p.pronamespace
       where n.nspname = ${bookkeepingSchema(SCHEMA)} and p.proname = any(${FUNCTIONS})
       order by p.proname`.execute(roles.as('owner').db);
    expect(rows.map((r) => r.name).sort()).toEqual([...FUNCTIONS].sort());
    for (const row of rows) {
      expect(row.owner, row.name).toBe(roles.role.owner);
      expect(row.definer, row.name).toBe(false);
      expect(row.config, row.name).toContain(
        `search_path=pg_catalog, ${SCHEMA}, ${bookkeepingSchema(SCHEMA)}, pg_temp`,
      );
    }
  });

  it('the sync role stores a window through them: items, visitors, ledger row, watermark', async () => {
    const sync = roles.as('sync');
    const load = await storeWindow(sync.pool, {
      sourceId: 'main',
      baseUrl: 'http://api.example.test',
      resource: 'feedback',
      day: DAY,
      status: 'done',
      valid: [item(1), item(2)],
      rejected: [{ item: { id: 3, feedback_id: 1, visitor: { id: 'v-3' } }, error: 'rating: expected int' }],
      requestedLimit: 1000,
      servedCount: 3,
      truncated: false,
      runId: null,
      startDay: DAY,
      today: '2026-03-03' as DayString,
    });
    expect(load).toMatchObject({ inserted: 2, visitors: { inserted: 2 } });
    const db = sync.db;
    const { rows } = await sql<{ items: number; visitors: number; rejects: number; mark: string | null }>`
      select (select count(*)::int from feedback) as items, (select count(*)::int from visitors) as visitors,
             (select count(*)::int from rejects) as rejects,
             (select day::text from watermarks where source_id = 'main') as mark`.execute(db);
    expect(rows[0]).toEqual({ items: 2, visitors: 2, rejects: 1, mark: DAY });
  });

  it("the receiver reaches the visitor merge only through the owner's merge_webhook_rows(): a delivery's new visitor is inserted", async () => {
    const [outcome] = await receiveDeliveries(roles.as('serve').pool, [
      {
        source: { name: 'main', baseUrl: 'http://api.example.test' },
        body: feedbackBody({ visitor: visitor('v-hook') }),
      },
    ]);
    expect(outcome).toMatchObject({ status: 'applied', merge: { visitor: 'inserted' } });
    const { rows } = await sql<{ observed_at: Date | null }>`
      select observed_at from visitors where id = 'v-hook'`.execute(roles.as('owner').db);
    expect(rows).toEqual([{ observed_at: null }]);
  });

  it.each(['serve', 'analyst', 'monitor'] as const)('the %s role may not run them', async (role) => {
    const db = roles.as(role).db;
    for (const name of FUNCTIONS) {
      const fn = sql.id(bookkeepingSchema(SCHEMA), name);
      const call =
        name === 'store_window'
          ? sql`select ${fn}('main', null, 'feedback', null, '[]', false, 'update', null, null, null)`
          : name === 'merge_visitors'
            ? sql`select * from ${fn}('{}', '{}', '{}', '{}')`
            : sql`select ${fn}('main', null, '[]', false, 'update', null)`;
      await expect(call.execute(db), `${role} runs ${name}`).rejects.toThrow(/permission denied/);
    }
  });
});
