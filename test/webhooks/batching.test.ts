/**
 * Micro-batching of deliveries (src/webhooks/delivery-batcher.ts, receive-batch.ts): deliveries
 * stored together in one transaction get the answers they would get one after the other, and a
 * body PostgreSQL refuses cannot fail the others of its batch.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createDeliveryBatcher, nextBatchSize, watchDeadlines } from '../../src/webhooks/delivery-batcher.js';
import { receiveDeliveries } from '../../src/webhooks/receive-batch.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { count, feedbackBody, surveyBody, visitor } from './webhook-helpers.js';

const MAIN = { name: 'main', baseUrl: 'http://api.example.test' };

describe('deliveries stored in batches', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(() => t.drop());
  beforeEach(async () => {
    await sql`truncate webhook_events, feedback, survey_answers, visitors, sources cascade`.execute(t.db);
  });

  it('one transaction, answers as if one after the other: copies, a key twice, an invalid body', async () => {
    const first = feedbackBody({ comment: 'first' });
    const sameKey = feedbackBody({ comment: 'second' });
    const survey = surveyBody({ visitor: visitor('v-2') });
    const invalid = { ...feedbackBody({ id: 99 }), feedback_id: 'seven' };
    const outcomes = await receiveDeliveries(t.pool, [
      { source: MAIN, body: first },
      { source: MAIN, body: first },
      { source: MAIN, body: sameKey },
      { source: MAIN, body: survey },
      { source: MAIN, body: invalid },
      { source: MAIN, body: invalid },
    ]);
    expect(outcomes.map((o) => [o.status, o.duplicate])).toEqual([
      ['applied', false],
      ['applied', true],
      ['applied', false],
      ['applied', false],
      ['rejected', false],
      ['rejected', true],
    ]);
    expect(outcomes[0]?.eventId).toBe(outcomes[1]?.eventId);
    expect(outcomes[0]).toMatchObject({ merge: { row: 'inserted', visitor: 'inserted' } });
    // The second body of the key fills nothing: every column it carries is set already.
    expect(outcomes[2]).toMatchObject({ merge: { row: 'unchanged', visitor: 'unchanged' } });
    const events = await t.db
      .selectFrom('webhook_events')
      .select(['status', 'delivery_count'])
      .orderBy('id')
      .execute();
    expect(events.map((e) => [e.status, e.delivery_count]).sort()).toEqual(
      [
        ['applied', 2],
        ['applied', 1],
        ['applied', 1],
        ['rejected', 2],
      ].sort(),
    );
    const rows = await t.db.selectFrom('feedback').select(['comment', 'origin']).execute();
    expect(rows).toEqual([{ comment: 'first', origin: 'webhook' }]);
    expect(await count(t, 'survey_answers')).toBe(1);
    expect(await count(t, 'visitors')).toBe(2);

    // The same deliveries again, in another batch: redeliveries, nothing written.
    const again = await receiveDeliveries(t.pool, [
      { source: MAIN, body: sameKey },
      { source: MAIN, body: invalid },
    ]);
    expect(again.map((o) => [o.status, o.duplicate])).toEqual([
      ['applied', true],
      ['rejected', true],
    ]);
    expect(await count(t, 'webhook_events')).toBe(4);
  });

  it('a commit that fails acknowledges none of its batch, and leaves nothing stored', async () => {
    // A deferred constraint trigger runs at COMMIT: every statement of the batch succeeded, the
    // commit itself fails (as on a full disk).
    await sql`create function fail_at_commit() returns trigger language plpgsql as $$
                begin raise exception 'no space left' using errcode = '53100'; end $$`.execute(t.db);
    await sql`create constraint trigger fail_at_commit after insert on webhook_events
                deferrable initially deferred for each row execute function fail_at_commit()`.execute(t.db);
    try {
      const batcher = createDeliveryBatcher({ pool: t.pool, maxConcurrent: 1 });
      const answers = await Promise.allSettled(
        [0, 1, 2, 3].map((id) => batcher.receive(MAIN, feedbackBody({ id }))),
      );
      expect(answers.map((a) => a.status)).toEqual(['rejected', 'rejected', 'rejected', 'rejected']);
      expect(await count(t, 'webhook_events')).toBe(0);
      expect(await count(t, 'feedback')).toBe(0);
    } finally {
      await sql`drop trigger fail_at_commit on webhook_events`.execute(t.db);
      await sql`drop function fail_at_commit()`.execute(t.db);
    }
  });

  it('a body PostgreSQL refuses fails its batch, then each is stored on its own: the others 200', async () => {
    // One transaction at a time: the deliveries sent meanwhile queue and go as one batch.
    const batcher = createDeliveryBatcher({ pool: t.pool, maxConcurrent: 1 });
    const refused = feedbackBody({
      id: 50,
      visitor: { ...visitor('v-0'), created_at: '0000-01-01T00:00:00.000Z' },
    });
    const bodies = [
      feedbackBody({ id: 1 }),
      feedbackBody({ id: 2 }),
      refused,
      surveyBody({ id: 3 }),
      feedbackBody({ id: 4 }),
    ];
    const outcomes = await Promise.all([
      batcher.receive(MAIN, feedbackBody({ id: 0 })),
      ...bodies.map((body) => batcher.receive(MAIN, body)),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual([
      'applied',
      'applied',
      'applied',
      'rejected',
      'applied',
      'applied',
    ]);
    const refusedOutcome = outcomes[3];
    expect(refusedOutcome?.status === 'rejected' && refusedOutcome.issues[0]?.message).toMatch(
      /database refused a value/,
    );
    expect(await count(t, 'webhook_events')).toBe(6);
    expect(await count(t, 'feedback')).toBe(4);
    expect(await count(t, 'survey_answers')).toBe(1);
  });

  it('a delivery is checked and keyed as it arrives: one that cannot be fails alone, not its batch', async () => {
    // One transaction at a time: the deliveries sent meanwhile queue and would go as one batch.
    const batcher = createDeliveryBatcher({ pool: t.pool, maxConcurrent: 1 });
    // No JSON parser makes a BigInt: a value the dedupe key cannot be computed from.
    const unkeyable = { ...feedbackBody({ id: 2 }), extra: 1n };
    const answers = await Promise.allSettled([
      batcher.receive(MAIN, feedbackBody({ id: 0 })),
      batcher.receive(MAIN, feedbackBody({ id: 1 })),
      batcher.receive(MAIN, unkeyable),
      batcher.receive(MAIN, surveyBody({ id: 3 })),
    ]);
    expect(answers.map((a) => a.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect(batcher.stats()).toEqual({ waiting: 0, held: 0, heldBytes: 0 });
    expect(await count(t, 'webhook_events')).toBe(3);
    expect(await count(t, 'feedback')).toBe(2);
    expect(await count(t, 'survey_answers')).toBe(1);
  });
});

describe('when a transaction of waiting deliveries starts (nextBatchSize)', () => {
  const limits = { maxBatch: 200, maxConcurrent: 2, minConcurrentBatch: 16 };

  it('a lone delivery goes at once when no transaction runs', () => {
    expect(nextBatchSize({ running: 0, waiting: 1 }, limits)).toBe(1);
    expect(nextBatchSize({ running: 0, waiting: 0 }, limits)).toBe(0);
  });

  it('beside a running transaction, only a batch worth its fixed cost starts; the rest waits for the next', () => {
    expect(nextBatchSize({ running: 1, waiting: 15 }, limits)).toBe(0);
    expect(nextBatchSize({ running: 1, waiting: 16 }, limits)).toBe(16);
  });

  it('never more transactions than maxConcurrent, nor more deliveries than maxBatch in one', () => {
    expect(nextBatchSize({ running: 2, waiting: 500 }, limits)).toBe(0);
    expect(nextBatchSize({ running: 0, waiting: 500 }, limits)).toBe(200);
    expect(nextBatchSize({ running: 1, waiting: 500 }, limits)).toBe(200);
  });
});

describe('the persist timeouts of deliveries (watchDeadlines)', () => {
  const pending = (deadline = Number.POSITIVE_INFINITY) => ({ deadline, settled: false });

  it('lets every answered delivery go once none before it waits, not at the next cut of its list', () => {
    const watch = watchDeadlines<ReturnType<typeof pending>>(() => {});
    const all = Array.from({ length: 1_000 }, () => pending());
    for (const p of all) watch.add(p);
    const answer = (from: number, to: number) => {
      for (const p of all.slice(from, to)) {
        p.settled = true;
        watch.settled();
      }
    };
    // Answered in order but for the oldest: all are still held behind it.
    answer(1, 700);
    expect(watch.held()).toBe(1_000);
    // The oldest answered: only the 300 not answered yet are held. The 700 answered stayed
    // referenced until more than 1,024 had passed and the list was cut.
    answer(0, 1);
    expect(watch.held()).toBe(300);
    answer(700, 900);
    expect(watch.held()).toBe(100);
    answer(900, 1_000);
    expect(watch.held()).toBe(0);
  });

  it('expires the deliveries past their deadline, oldest first, and lets them go too', async () => {
    const expired: number[] = [];
    const watch = watchDeadlines<ReturnType<typeof pending> & { n: number }>((p) => {
      expired.push(p.n);
      p.settled = true;
      watch.settled();
    });
    const now = performance.now();
    const late = [0, 1, 2].map((n) => ({ ...pending(now + 5), n }));
    const later = { ...pending(now + 60_000), n: 3 };
    for (const p of [...late, later]) watch.add(p);
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(expired).toEqual([0, 1, 2]);
    expect(watch.held()).toBe(1);
    later.settled = true;
    watch.settled();
    expect(watch.held()).toBe(0);
  });
});
