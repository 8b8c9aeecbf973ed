import { mkdirSync, writeFileSync } from 'node:fs';
import fc from 'fast-check';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WebhookServer } from '../../src/webhooks/server.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { feedbackBody, listen, MAIN_URL, receiver, surveyBody } from '../webhooks/webhook-helpers.js';
import { watchUnhandled } from './unhandled.js';

/**
 * Guarantee 8: 10,000 fuzzed webhook deliveries (random JSON, random bytes, wrong content types,
 * oversized bodies, __proto__ and constructor.prototype keys, valid bodies with one field
 * changed), through fastify's inject and, for a share, over real loopback HTTP. 0 crashes, no 5xx
 * (503 would mean the database is down, which it is not here), and every delivery answered 200
 * or 422 is a stored row of webhook_events with that status. test/webhooks/fuzz.test.ts runs
 * 1,000 of the same kinds in `npm test`.
 */

const BODY_LIMIT = 16 * 1024;
const SEED = 808;
/** What the receiver may answer a body when the database is up. */
const ANSWERS = new Set([200, 400, 413, 415, 422]);

interface Delivery {
  kind: string;
  payload: string | Buffer;
  contentType: string;
}

const anyJson = fc.jsonValue({ maxDepth: 5, stringUnit: 'binary' });
const contentTypes = fc.constantFrom(
  'application/json',
  'application/json; charset=utf-8',
  'application/json; charset=UTF8',
  // JSON in another charset: 415 before the body is read.
  'application/json; charset=latin1',
  'application/json; charset=utf-16',
  'text/plain',
  'application/xml',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/octet-stream',
);

const valid = fc
  .record({
    survey: fc.boolean(),
    id: fc.integer({ min: 1, max: 2_000_000 }),
    visitor: fc.integer({ min: 1, max: 50 }),
  })
  .map(({ survey, id, visitor }) => {
    const body: Record<string, unknown> = survey ? surveyBody({ id }) : feedbackBody({ id });
    (body.visitor as Record<string, unknown>).id = `v-${visitor}`;
    return body;
  });

const mutated = fc
  .record({
    body: valid,
    inVisitor: fc.boolean(),
    key: fc.oneof(
      fc.constantFrom(
        'type',
        'id',
        'feedback_id',
        'question_id',
        'comment',
        'answer',
        'created_at',
        'visitor',
        'email',
      ),
      fc.string({ unit: 'binary', maxLength: 8 }),
    ),
    value: fc.option(anyJson, { nil: undefined }),
  })
  .map(({ body, inVisitor, key, value }) => {
    const target = inVisitor ? (body.visitor as Record<string, unknown>) : body;
    if (value === undefined) delete target[key];
    else target[key] = value;
    return body;
  });

/** A valid or random body with a poisoning key spliced in at the top or one level down. */
const poisoned = fc
  .record({
    base: fc.oneof(
      valid.map((b) => JSON.stringify(b)),
      fc.json({ maxDepth: 3 }),
    ),
    key: fc.constantFrom(
      '"__proto__":{"polluted":1}',
      '"constructor":{"prototype":{"polluted":1}}',
      '"__proto__":null',
    ),
  })
  .map(({ base, key }) => base.replace(/[{[]/, (c) => (c === '{' ? `{${key},` : `[{${key}},`)));

const deliveries: fc.Arbitrary<Delivery> = fc.oneof(
  {
    weight: 30,
    arbitrary: anyJson.map((v) => ({
      kind: 'random JSON',
      payload: JSON.stringify(v),
      contentType: 'application/json',
    })),
  },
  {
    weight: 25,
    arbitrary: mutated.map((b) => ({
      kind: 'mutated body',
      payload: JSON.stringify(b),
      contentType: 'application/json',
    })),
  },
  {
    weight: 10,
    arbitrary: valid.map((b) => ({
      kind: 'valid body',
      payload: JSON.stringify(b),
      contentType: 'application/json',
    })),
  },
  {
    weight: 15,
    arbitrary: fc
      .record({
        payload: fc.oneof(
          fc.string({ unit: 'binary', maxLength: 300 }),
          fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes)),
        ),
        contentType: contentTypes,
      })
      .map(({ payload, contentType }) => ({ kind: 'random bytes', payload, contentType })),
  },
  {
    weight: 5,
    arbitrary: fc.record({ body: valid, contentType: contentTypes }).map(({ body, contentType }) => ({
      kind: 'wrong content type',
      payload: JSON.stringify(body),
      contentType,
    })),
  },
  {
    weight: 10,
    arbitrary: poisoned.map((payload) => ({
      kind: '__proto__ key',
      payload,
      contentType: 'application/json',
    })),
  },
  {
    weight: 5,
    arbitrary: fc.integer({ min: BODY_LIMIT + 1, max: BODY_LIMIT * 4 }).map((size) => ({
      kind: 'oversized',
      payload: JSON.stringify({ ...feedbackBody(), comment: 'x'.repeat(size) }),
      contentType: 'application/json',
    })),
  },
);

describe('10,000 fuzzed webhook deliveries', () => {
  let t: TestDatabase;
  let app: WebhookServer;
  let base: string;
  const unhandled = watchUnhandled();
  const tally: Record<string, Record<number, number>> = {};
  let elapsedMs = 0;

  beforeAll(async () => {
    t = await createTestDatabase();
    app = receiver(t.pool, { bodyLimit: BODY_LIMIT });
    base = await listen(app);
  });
  afterAll(async () => {
    await app.close();
    await t.drop();
    mkdirSync('test-output/reliability', { recursive: true });
    writeFileSync(
      'test-output/reliability/webhook-fuzz.json',
      `${JSON.stringify({ elapsedMs, answersByKind: tally }, null, 2)}\n`,
    );
  });

  it('0 crashes, no 5xx, every delivery answered 200 or 422 stored with that status', async () => {
    const all = fc.sample(deliveries, { numRuns: 10_000, seed: SEED });
    expect(all).toHaveLength(10_000);
    const accepted: { eventId: number; status: 'applied' | 'rejected' }[] = [];
    const unexpected: string[] = [];
    const started = performance.now();

    const deliver = async (delivery: Delivery, index: number) => {
      // One in ten over real loopback HTTP (body streamed, 413 before it is read); the rest injected.
      let status: number;
      let answer: { event_id?: number } = {};
      if (index % 10 === 0) {
        const response = await fetch(`${base}${MAIN_URL}`, {
          method: 'POST',
          headers: { 'content-type': delivery.contentType },
          body: delivery.payload,
        });
        status = response.status;
        const text = await response.text();
        answer = text.startsWith('{') ? (JSON.parse(text) as { event_id?: number }) : {};
      } else {
        const response = await app.inject({
          method: 'POST',
          url: MAIN_URL,
          headers: { 'content-type': delivery.contentType },
          payload: delivery.payload,
        });
        status = response.statusCode;
        answer = response.body.startsWith('{') ? (response.json() as { event_id?: number }) : {};
      }
      const byKind = tally[delivery.kind] ?? {};
      byKind[status] = (byKind[status] ?? 0) + 1;
      tally[delivery.kind] = byKind;
      if (!ANSWERS.has(status)) unexpected.push(`${delivery.kind} -> ${status}`);
      if (status === 200 || status === 422) {
        if (typeof answer.event_id !== 'number')
          unexpected.push(`${delivery.kind} -> ${status} without event_id`);
        else accepted.push({ eventId: answer.event_id, status: status === 200 ? 'applied' : 'rejected' });
      }
      if (delivery.kind === 'oversized' && status !== 413) unexpected.push(`oversized -> ${status}`);
      if (/charset=(?!utf-?8$)/i.test(delivery.contentType) && status !== 415)
        unexpected.push(`${delivery.kind} as ${delivery.contentType} -> ${status}`);
    };

    // Eight senders at once, as a busy service would deliver.
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        for (let i = next++; i < all.length; i = next++) await deliver(all[i] as Delivery, i);
      }),
    );
    elapsedMs = Math.round(performance.now() - started);

    expect(unexpected).toEqual([]);
    expect(unhandled()).toEqual([]);
    // Every answer of 200 or 422 is a stored delivery with that status (a redelivery of an applied
    // body answers 200 with the applied event's id).
    const stored = new Map(
      (await t.db.selectFrom('webhook_events').select(['id', 'status']).execute()).map((e) => [
        e.id,
        e.status,
      ]),
    );
    const missing = accepted.filter((a) => stored.get(a.eventId) !== a.status);
    expect(missing).toEqual([]);
    expect(accepted.filter((a) => a.status === 'applied').length).toBeGreaterThan(1_000);
    expect(accepted.filter((a) => a.status === 'rejected').length).toBeGreaterThan(1_000);
    // No row without an applied delivery behind it, and the receiver still answers.
    const orphans = await sql<{ n: number }>`
      select (select count(*)::int from feedback f where not exists (
                select 1 from webhook_events e where e.status = 'applied'
                  and e.body->'id' = to_jsonb(f.id) and e.body->'feedback_id' = to_jsonb(f.feedback_id)))
           + (select count(*)::int from survey_answers s where not exists (
                select 1 from webhook_events e where e.status = 'applied'
                  and e.body->'id' = to_jsonb(s.id) and e.body->'question_id' = to_jsonb(s.question_id))) as n`.execute(
      t.db,
    );
    expect(orphans.rows[0]?.n).toBe(0);
    expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
    expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
  }, 300_000);
});
