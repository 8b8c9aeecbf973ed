import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrations } from '../../migrations/index.js';
import { inTransaction } from '../../src/db/transaction.js';
import { ensureSource } from '../../src/load/sources.js';
import { loadWindowItems } from '../../src/load/windowed.js';
import type { Feedback } from '../../src/schemas/feedback.js';
import type { SurveyAnswer } from '../../src/schemas/survey-answer.js';
import type { Visitor } from '../../src/schemas/visitor.js';
import { receiveDelivery } from '../../src/webhooks/receive.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { testMigrator } from '../helpers/merge-migrations.js';
import { feedbackBody, visitor } from '../webhooks/webhook-helpers.js';

const BASE_URL = 'http://api.example.test';

/** The same visitor as seen on three days: each observation with other attributes. */
const OBSERVED: { dt: string; visitor: Visitor }[] = [
  { dt: '2026-03-01T09:00:00.000Z', visitor: { ...visitor('v-seen'), device: 'desktop', os: 'Linux' } },
  { dt: '2026-03-02T09:00:00.000Z', visitor: { ...visitor('v-seen'), device: 'tablet', os: 'iPadOS' } },
  { dt: '2026-03-03T09:00:00.000Z', visitor: { ...visitor('v-seen'), device: 'mobile', os: 'Android' } },
];

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

function surveyItem(id: number, dt: string, v: Visitor): SurveyAnswer {
  return {
    id,
    question_id: 1,
    question: 'What brought you here?',
    session: `s-${id}`,
    comment: 'a friend',
    dt,
    url: 'https://shop.example.test/',
    visitor: v,
  };
}

/** Day n's window: a feedback item and a survey answer of the visitor as observed that day. */
function windowOf(day: number) {
  const seen = OBSERVED[day] as (typeof OBSERVED)[number];
  return {
    feedback: [feedbackItem(100 + day, seen.dt, seen.visitor)],
    survey: [surveyItem(200 + day, seen.dt, seen.visitor)],
  };
}

const PERMUTATIONS = [
  [0, 1, 2],
  [0, 2, 1],
  [1, 0, 2],
  [1, 2, 0],
  [2, 0, 1],
  [2, 1, 0],
];

describe('a visitor row holds the most recent observation by dt, whatever order windows load in', () => {
  let t: TestDatabase;

  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(() => t.drop());

  const loadDay = (source: string, day: number) =>
    inTransaction(t.pool, async (trx) => {
      await ensureSource(trx, source, BASE_URL);
      const items = windowOf(day);
      await loadWindowItems(trx, 'feedback', source, items.feedback);
      return loadWindowItems(trx, 'survey', source, items.survey);
    });
  const visitorRow = (source: string, id = 'v-seen') =>
    t.db
      .selectFrom('visitors')
      .select(['device', 'os', 'observed_at', 'raw'])
      .where('source_id', '=', source)
      .where('id', '=', id)
      .executeTakeFirst();
  const latest = { device: 'mobile', os: 'Android', observed_at: new Date('2026-03-03T09:00:00.000Z') };

  it('in each of the six orders, one window after the other', async () => {
    for (const order of PERMUTATIONS) {
      const source = `sequential-${order.join('')}`;
      for (const day of order) await loadDay(source, day);
      expect(await visitorRow(source), order.join(',')).toMatchObject({
        ...latest,
        raw: OBSERVED[2]?.visitor,
      });
    }
  });

  it('with the three windows loading at once, again and again', async () => {
    for (let round = 0; round < 8; round++) {
      const source = `concurrent-${round}`;
      const order = PERMUTATIONS[round % PERMUTATIONS.length] as number[];
      await Promise.all(order.map((day) => loadDay(source, day)));
      expect(await visitorRow(source), `round ${round}`).toMatchObject(latest);
    }
  });

  it('a backfill of older days does not revert the attributes, and writes nothing', async () => {
    const source = 'backfill';
    await loadDay(source, 2);
    const before = await t.db
      .selectFrom('visitors')
      .select(['last_changed_at'])
      .where('source_id', '=', source)
      .executeTakeFirstOrThrow();
    const old = await loadDay(source, 0);
    expect(old.visitors).toMatchObject({ inserted: 0, updated: 0, unchanged: 1 });
    await loadDay(source, 1);
    expect(await visitorRow(source)).toMatchObject(latest);
    const after = await t.db
      .selectFrom('visitors')
      .select(['last_changed_at'])
      .where('source_id', '=', source)
      .executeTakeFirstOrThrow();
    expect(after.last_changed_at).toEqual(before.last_changed_at);
    // Reading the latest day again changes nothing either.
    expect((await loadDay(source, 2)).visitors).toMatchObject({ inserted: 0, updated: 0, unchanged: 1 });
  });

  it('in one window, the later item wins whatever its place in the response', async () => {
    for (const reversed of [false, true]) {
      const source = `one-window-${reversed}`;
      const items = [0, 1, 2].map((day) => {
        const seen = OBSERVED[day] as (typeof OBSERVED)[number];
        return feedbackItem(300 + day, seen.dt, seen.visitor);
      });
      await inTransaction(t.pool, async (trx) => {
        await ensureSource(trx, source, BASE_URL);
        const load = await loadWindowItems(trx, 'feedback', source, reversed ? items.reverse() : items);
        expect(load.visitors).toMatchObject({ inserted: 1, conflicts: 1 });
      });
      expect(await visitorRow(source)).toMatchObject(latest);
    }
  });

  it('two observations with the same dt: the same one wins in either order (by content)', async () => {
    const dt = '2026-03-04T12:00:00.000Z';
    const a = { ...visitor('v-tie'), device: 'desktop' };
    const b = { ...visitor('v-tie'), device: 'mobile' };
    const rows: unknown[] = [];
    for (const [first, second] of [
      [a, b],
      [b, a],
    ] as const) {
      const source = `tie-${rows.length}`;
      for (const [n, v] of [first, second].entries())
        await inTransaction(t.pool, async (trx) => {
          await ensureSource(trx, source, BASE_URL);
          await loadWindowItems(trx, 'feedback', source, [feedbackItem(400 + n, dt, v)]);
        });
      rows.push(await visitorRow(source, 'v-tie'));
    }
    expect(rows[0]).toEqual(rows[1]);
  });

  it('a webhook never overwrites an API observation, but creates a row the API has not', async () => {
    const source = 'webhook-then-api';
    const hook = { ...visitor('v-seen'), device: 'smart-tv', os: 'Tizen' };
    // First a webhook: the row is created, with no observation time.
    await receiveDelivery(
      t.pool,
      { name: source, baseUrl: BASE_URL },
      feedbackBody({ id: 100, visitor: hook }),
    );
    expect(await visitorRow(source)).toMatchObject({ device: 'smart-tv', observed_at: null });
    // The API's older observation replaces it ...
    await loadDay(source, 0);
    expect(await visitorRow(source)).toMatchObject({ device: 'desktop' });
    // ... and no later webhook changes the API's copy.
    await receiveDelivery(
      t.pool,
      { name: source, baseUrl: BASE_URL },
      feedbackBody({ id: 900, visitor: hook }),
    );
    expect(await visitorRow(source)).toMatchObject({ device: 'desktop', os: 'Linux' });
  });
});

describe('a webhook visitor the API contradicts leaves no orphan', () => {
  let t: TestDatabase;

  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(() => t.drop());

  const source = { name: 'main', baseUrl: BASE_URL };
  const visitorIds = async () =>
    (
      await t.db.selectFrom('visitors').select('id').where('source_id', '=', 'main').orderBy('id').execute()
    ).map((r) => r.id);
  const apiLoad = (items: Feedback[]) =>
    inTransaction(t.pool, async (trx) => {
      await ensureSource(trx, 'main', BASE_URL);
      return loadWindowItems(trx, 'feedback', 'main', items);
    });

  it('webhook first: the API confirms the row with another visitor; the webhook-only visitor goes', async () => {
    await receiveDelivery(
      t.pool,
      source,
      feedbackBody({ id: 1, feedback_id: 1, visitor: visitor('v-hook-only') }),
    );
    // Named by two deliveries: the second row keeps it referenced until the API confirms it too.
    await receiveDelivery(
      t.pool,
      source,
      feedbackBody({ id: 2, feedback_id: 1, visitor: visitor('v-hook-twice') }),
    );
    await receiveDelivery(
      t.pool,
      source,
      feedbackBody({ id: 3, feedback_id: 1, visitor: visitor('v-hook-twice') }),
    );
    expect(await visitorIds()).toEqual(['v-hook-only', 'v-hook-twice']);

    const dt = '2026-03-05T10:00:00.000Z';
    await apiLoad([feedbackItem(1, dt, visitor('v-api')), feedbackItem(2, dt, visitor('v-api'))]);
    expect(await visitorIds()).toEqual(['v-api', 'v-hook-twice']);
    await apiLoad([feedbackItem(3, dt, visitor('v-api'))]);
    expect(await visitorIds()).toEqual(['v-api']);
    const rows = await t.db
      .selectFrom('feedback')
      .select(['id', 'visitor_id', 'origin'])
      .orderBy('id')
      .execute();
    expect(rows).toEqual([1, 2, 3].map((id) => ({ id, visitor_id: 'v-api', origin: 'both' })));
  });

  it('a visitor the API has observed is kept, even when a row stops naming them', async () => {
    const dt = '2026-03-05T11:00:00.000Z';
    await apiLoad([feedbackItem(10, dt, visitor('v-real'))]);
    await apiLoad([feedbackItem(10, dt, visitor('v-api'))]);
    expect(await visitorIds()).toContain('v-real');
  });

  it('API first: a late webhook naming another visitor adds no visitor row', async () => {
    const dt = '2026-03-05T12:00:00.000Z';
    await apiLoad([feedbackItem(20, dt, visitor('v-api'))]);
    const before = await visitorIds();
    const outcome = await receiveDelivery(
      t.pool,
      source,
      feedbackBody({ id: 20, feedback_id: 1, visitor: visitor('v-late-hook') }),
    );
    expect(outcome).toMatchObject({ status: 'applied', merge: { row: 'filled', visitor: 'unchanged' } });
    expect(await visitorIds()).toEqual(before);
    const orphans = await sql<{ n: number }>`
      select count(*)::int as n from visitors v
       where not exists (select 1 from feedback f where f.source_id = v.source_id and f.visitor_id = v.id)
         and not exists (select 1 from survey_answers s where s.source_id = v.source_id and s.visitor_id = v.id)
         and v.observed_at is null`.execute(t.db);
    expect(orphans.rows[0]?.n).toBe(0);
  });
});

describe('migration 0007 dates the visitors loaded before it', () => {
  let t: TestDatabase;

  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(() => t.drop());

  it('observed_at: the latest dt of an API row naming the visitor, less a microsecond; null for webhook-only ones', async () => {
    const migrator = testMigrator(t);
    const names = Object.keys(migrations).sort();
    const previous = names[names.indexOf('0007-suppressions') - 1] as string;
    expect((await migrator.migrateTo(previous)).error).toBeUndefined();
    await sql`insert into sources (source_id, base_url) values ('main', ${BASE_URL})`.execute(t.db);
    for (const id of ['v-api', 'v-hook'])
      await sql`insert into visitors (source_id, id, raw) values ('main', ${id}, '{}')`.execute(t.db);
    await sql`insert into feedback (source_id, id, feedback_id, dt, visitor_id, raw) values
      ('main', 1, 1, '2026-03-01T10:00:00Z', 'v-api', '{}'),
      ('main', 2, 1, '2026-03-04T10:00:00Z', 'v-api', '{}')`.execute(t.db);
    await sql`insert into survey_answers (source_id, id, question_id, dt, visitor_id, raw, origin) values
      ('main', 1, 1, '2026-03-02T10:00:00Z', 'v-api', '{}', 'api'),
      ('main', 2, 1, null, 'v-hook', '{}', 'webhook')`.execute(t.db);
    expect((await migrator.migrateToLatest()).error).toBeUndefined();

    const rows = await t.db.selectFrom('visitors').select(['id', 'observed_at']).orderBy('id').execute();
    expect(rows).toEqual([
      { id: 'v-api', observed_at: new Date('2026-03-04T09:59:59.999Z') },
      { id: 'v-hook', observed_at: null },
    ]);
    // The microsecond: that latest item, read again, is newer; it replaces the row.
    const exact = await sql<{ newer: boolean }>`
      select observed_at < '2026-03-04T10:00:00Z'::timestamptz and observed_at > '2026-03-04T09:59:59.999Z'::timestamptz as newer
        from visitors where id = 'v-api'`.execute(t.db);
    expect(exact.rows[0]?.newer).toBe(true);
  });
});
