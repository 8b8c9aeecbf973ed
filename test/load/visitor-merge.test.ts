/**
 * One visitor merge (migration 0043): a window's write (store_window -> merge_window_<table>) and
 * a webhook batch (receive_webhook_batch -> merge_webhook_rows) merge their visitors through the
 * one function merge_visitors(), and through nothing else. Shown twice: no other function of the
 * warehouse writes visitors' rows, and a sequence of observations of one visitor, fed to a source
 * through windows and webhook batches, leaves after each step the row merge_visitors() leaves when
 * given the same observations one by one. A path that merged otherwise fails the second test.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bookkeepingSchema } from '../../src/db/bookkeeping.js';
import type { Feedback } from '../../src/schemas/feedback.js';
import type { Visitor } from '../../src/schemas/visitor.js';
import { storeWindow } from '../../src/sync/store-window.js';
import type { DayString } from '../../src/time/days.js';
import { receiveDeliveries } from '../../src/webhooks/receive-batch.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { testMigrator } from '../helpers/merge-migrations.js';
import { feedbackBody, visitor } from '../webhooks/webhook-helpers.js';

const BASE_URL = 'http://api.example.test';
const VISITOR = 'v-same';
/** Where the products' paths write, and where merge_visitors() is called directly. */
const PRODUCT = 'product';
const DIRECT = 'direct';

/** One observation of the visitor: by a window's item (dt) or by a webhook delivery (no dt). */
interface Step {
  label: string;
  by: 'window' | 'webhook';
  dt?: string;
  device: string;
}

/** Webhooks before and after the API's copy, and windows loading an older and a newer day. */
const STEPS: Step[] = [
  { label: 'a webhook names the unknown visitor', by: 'webhook', device: 'watch' },
  { label: 'a second webhook finds it known', by: 'webhook', device: 'console' },
  {
    label: "a window's item replaces the webhook's copy",
    by: 'window',
    dt: '2026-03-02T09:00:00.000Z',
    device: 'tablet',
  },
  { label: 'a webhook leaves the API copy alone', by: 'webhook', device: 'smart-tv' },
  {
    label: 'an older day loaded later changes nothing',
    by: 'window',
    dt: '2026-03-01T09:00:00.000Z',
    device: 'desktop',
  },
  { label: 'a newer day replaces it', by: 'window', dt: '2026-03-03T09:00:00.000Z', device: 'mobile' },
  {
    label: 'the same dt: the larger raw wins',
    by: 'window',
    dt: '2026-03-03T09:00:00.000Z',
    device: 'phablet',
  },
];

const observed = (step: Step): Visitor => ({ ...visitor(VISITOR), device: step.device });

function feedbackItem(id: number, dt: string, v: Visitor): Feedback {
  return {
    id,
    feedback_id: 1,
    question: 'How was your visit?',
    session: `s-${id}`,
    comment: 'fine',
    rating: 4,
    rating_text: 'good',
    dt,
    url: 'https://shop.example.test/',
    screenshot: `https://cdn.example.test/${id}.png`,
    visitor: v,
  };
}

describe('a window and a webhook batch merge a visitor through the one function', () => {
  let t: TestDatabase;

  beforeAll(async () => {
    t = await createTestDatabase();
    await sql`insert into sources (source_id, base_url) values (${PRODUCT}, ${BASE_URL}), (${DIRECT}, ${BASE_URL})`.execute(
      t.db,
    );
  });
  afterAll(() => t.drop());

  const row = async (source: string) => {
    const { rows } = await sql<Record<string, unknown>>`
      select name, company, email, ip, user_agent, landing_page, ref_page, created_at, device, browser, os,
             raw, observed_at
        from visitors where source_id = ${source} and id = ${VISITOR}`.execute(t.db);
    return rows[0];
  };

  /** The product's path for the step: a window's write, or a webhook batch of one delivery. */
  async function throughProduct(step: Step, n: number): Promise<{ inserted: number; updated: number }> {
    if (step.by === 'webhook') {
      const [outcome] = await receiveDeliveries(
        t.pool,
        [
          {
            source: { name: PRODUCT, baseUrl: BASE_URL },
            body: feedbackBody({ id: 5000 + n, visitor: observed(step) }),
          },
        ],
        new Set([PRODUCT]),
      );
      expect(outcome, step.label).toMatchObject({ status: 'applied' });
      const merged = outcome?.status === 'applied' ? outcome.merge : undefined;
      return { inserted: merged?.visitor === 'inserted' ? 1 : 0, updated: 0 };
    }
    const day = step.dt?.slice(0, 10) as DayString;
    const load = await storeWindow(t.pool, {
      sourceId: PRODUCT,
      baseUrl: BASE_URL,
      resource: 'feedback',
      day,
      status: 'open',
      valid: [feedbackItem(100 + n, step.dt as string, observed(step))],
      rejected: [],
      requestedLimit: 1000,
      servedCount: 1,
      truncated: false,
      runId: null,
      startDay: '2026-03-01' as DayString,
      today: '2026-03-04' as DayString,
    });
    return { inserted: load.visitors.inserted, updated: load.visitors.updated };
  }

  /** merge_visitors() itself, given observations as its callers give them: source, fields, raw, dt. */
  const merge = (given: readonly { source: string; visitor: Visitor; observedAt: string | null }[]) =>
    sql<{ inserted: boolean; changed: boolean }>`
      select m.inserted, m.changed
        from ${sql.id(bookkeepingSchema(t.schema), 'merge_visitors')}(
          ${given.map((g) => g.source)}::text[], ${given.map((g) => JSON.stringify(g.visitor))}::jsonb[],
          ${given.map((g) => JSON.stringify(g.visitor))}::jsonb[], ${given.map((g) => g.observedAt)}::timestamptz[]) m`.execute(
      t.db,
    );

  /** The same observation given to merge_visitors() itself. */
  async function direct(step: Step): Promise<{ inserted: number; updated: number }> {
    const { rows } = await merge([{ source: DIRECT, visitor: observed(step), observedAt: step.dt ?? null }]);
    return {
      inserted: rows.filter((r) => r.inserted).length,
      updated: rows.filter((r) => !r.inserted && r.changed).length,
    };
  }

  it('no function but merge_visitors() writes visitors, and both writers call it', async () => {
    const { rows } = await sql<{ name: string; body: string }>`
      select p.proname as name, p.prosrc as body
        from pg_proc p join pg_namespace n on n.oid = p.pronamespace
       where n.nspname in (${t.schema}, ${bookkeepingSchema(t.schema)})`.execute(t.db);
    const writers = rows.filter((r) => /insert\s+into\s+visitors\b/i.test(r.body)).map((r) => r.name);
    expect(writers).toEqual(['merge_visitors']);
    const callers = rows.filter((r) => /merge_visitors\s*\(/.test(r.body)).map((r) => r.name);
    expect(callers.sort()).toEqual([
      'merge_webhook_rows',
      'merge_window_feedback',
      'merge_window_survey_answers',
    ]);
  });

  it('after each step the row and the counts are those of merge_visitors() given the same observations', async () => {
    for (const [n, step] of STEPS.entries()) {
      const product = await throughProduct(step, n);
      const expected = await direct(step);
      expect(product, step.label).toEqual(expected);
      expect(await row(PRODUCT), step.label).toEqual(await row(DIRECT));
    }
    // What the steps show: the newest dt's larger raw, whatever came before or after it.
    expect(await row(PRODUCT)).toMatchObject({
      device: 'phablet',
      observed_at: new Date('2026-03-03T09:00:00.000Z'),
    });
  });

  it("merge_webhook_rows() drops a row's observed_at: called by hand, a webhook still never replaces a visitor", async () => {
    const fn = sql.id(bookkeepingSchema(t.schema), 'merge_webhook_rows');
    const forged = (id: string) => ({
      ...visitor(id),
      source_id: PRODUCT,
      device: 'forged',
      raw: JSON.stringify({ ...visitor(id), device: 'forged' }),
      observed_at: '2099-01-01T00:00:00.000Z',
    });
    const before = await row(PRODUCT);
    // A row naming the new visitor: else it would be removed again as an orphan.
    const named = { source_id: PRODUCT, id: 9001, feedback_id: 1, visitor_id: 'v-new', raw: {} };
    const { rows } = await sql<{ written_table: string; id: string }>`
      select m.written_table, m.id
        from ${fn}(${JSON.stringify([forged(VISITOR), forged('v-new')])}::jsonb, ${JSON.stringify([named])}::jsonb, '[]') m`.execute(
      t.db,
    );
    expect(rows.filter((r) => r.written_table === 'visitors').map((r) => r.id)).toEqual(['v-new']);
    expect(await row(PRODUCT)).toEqual(before);
    const { rows: fresh } = await sql<{ observed_at: Date | null; device: string }>`
      select observed_at, device from visitors where source_id = ${PRODUCT} and id = 'v-new'`.execute(t.db);
    expect(fresh).toEqual([{ observed_at: null, device: 'forged' }]);
  });

  it('merge_visitors() keeps, of one call, the newest dt, then the larger raw; of untimed rows the first given', async () => {
    const of = (id: string, device: string, observedAt: string | null) => ({
      source: DIRECT,
      visitor: { ...visitor(id), device },
      observedAt,
    });
    await merge([
      of('v-timed', 'alpha', '2026-03-01T09:00:00.000Z'),
      of('v-timed', 'beta', '2026-03-02T09:00:00.000Z'),
      of('v-timed', 'gamma', '2026-03-02T09:00:00.000Z'),
      of('v-timed', 'zeta', null),
      of('v-untimed', 'zeta', null),
      of('v-untimed', 'alpha', null),
    ]);
    const { rows } = await sql<{ id: string; device: string }>`
      select id, device from visitors where source_id = ${DIRECT} and id in ('v-timed', 'v-untimed') order by id`.execute(
      t.db,
    );
    expect(rows).toEqual([
      { id: 'v-timed', device: 'gamma' },
      { id: 'v-untimed', device: 'zeta' },
    ]);
  });
});

describe('migration 0043 swaps the copies for the call, and back', () => {
  let t: TestDatabase;

  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(() => t.drop());

  const CALLERS = ['merge_window_feedback', 'merge_window_survey_answers', 'merge_webhook_rows'];
  /** The callers' whole definitions (settings, rights, body), and whether merge_visitors exists. */
  const definitions = async () => {
    const { rows } = await sql<{ name: string; def: string; acl: string | null }>`
      select p.proname as name, pg_get_functiondef(p.oid) as def, p.proacl::text as acl
        from pg_proc p join pg_namespace n on n.oid = p.pronamespace
       where n.nspname = ${bookkeepingSchema(t.schema)} and p.proname = any(${[...CALLERS, 'merge_visitors']})
       order by p.proname`.execute(t.db);
    return rows;
  };

  // Each template's migrate runs up() on 0041's and 0042's own definitions, and up() throws unless
  // it finds each copy exactly once: the copies in 0043 are those functions' text.
  it('down gives back the copies, up the same calls again, rights and settings kept', async () => {
    const migrator = testMigrator(t);
    const latest = await definitions();
    expect(latest.map((r) => r.name)).toContain('merge_visitors');
    expect((await migrator.migrateTo('0042-webhook-batch-function')).error).toBeUndefined();
    const before = await definitions();
    expect(before.map((r) => r.name).sort()).toEqual([...CALLERS].sort());
    for (const { name, def } of before) expect(def, name).toMatch(/insert into visitors/);

    // From 0042's functions, as a warehouse upgraded from them: up, down, up.
    expect((await migrator.migrateToLatest()).error).toBeUndefined();
    expect(await definitions()).toEqual(latest);
    expect((await migrator.migrateTo('0042-webhook-batch-function')).error).toBeUndefined();
    expect(await definitions()).toEqual(before);
    expect((await migrator.migrateToLatest()).error).toBeUndefined();
    expect(await definitions()).toEqual(latest);
  });
});
