import fc from 'fast-check';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WebhookServer } from '../../src/webhooks/server.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { feedbackBody, MAIN_URL, receiver, surveyBody } from './webhook-helpers.js';

/** What the receiver may answer a body; 5xx only when the database is down (not here). */
const BODY_ANSWERS = [200, 400, 413, 415, 422];

/** Strings of any UTF-16 code units: U+0000, lone surrogates, control characters. */
const anyJson = fc.jsonValue({ maxDepth: 4, stringUnit: 'binary' });

/** A valid body with one field removed, replaced by any JSON, or added: at the top or in the visitor. */
const mutatedBody = fc
  .record({
    base: fc.constantFrom<Record<string, unknown>>(feedbackBody(), surveyBody()),
    id: fc.integer({ min: 1, max: 1_000_000 }),
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
      ),
      fc.string({ unit: 'binary', maxLength: 8 }),
    ),
    value: fc.option(anyJson, { nil: undefined }),
  })
  .map(({ base, id, inVisitor, key, value }) => {
    const body: Record<string, unknown> = structuredClone({ ...base, id });
    const target = inVisitor ? (body.visitor as Record<string, unknown>) : body;
    if (value === undefined) delete target[key];
    else target[key] = value;
    return body;
  });

describe('random and mutated bodies: never a crash, never a 5xx', () => {
  let t: TestDatabase;
  let app: WebhookServer;

  beforeAll(async () => {
    t = await createTestDatabase();
    app = receiver(t.pool);
  });
  afterAll(async () => {
    await app.close();
    await t.drop();
  });

  const post = (payload: string | Buffer, contentType = 'application/json') =>
    app.inject({ method: 'POST', url: MAIN_URL, headers: { 'content-type': contentType }, payload });

  it('any JSON value: 200 or 422 with the field named, or 400/413', async () => {
    await fc.assert(
      fc.asyncProperty(anyJson, async (body) => {
        const response = await post(JSON.stringify(body));
        expect(BODY_ANSWERS).toContain(response.statusCode);
        if (response.statusCode === 422) expect(typeof response.json().field).toBe('string');
      }),
      { numRuns: 300 },
    );
  });

  it('valid bodies with one field changed: 200, or 422 naming a field, and stored either way', async () => {
    await fc.assert(
      fc.asyncProperty(mutatedBody, async (body) => {
        const text = JSON.stringify(body);
        const response = await post(text);
        // A generated value may carry a __proto__ or constructor.prototype key: poisoning, 400.
        if (response.statusCode === 400 && /"__proto__"|"prototype"/.test(text)) return;
        expect([200, 422]).toContain(response.statusCode);
        const answer = response.json();
        const stored = await t.db
          .selectFrom('webhook_events')
          .select('status')
          .where('id', '=', answer.event_id)
          .executeTakeFirst();
        expect(stored?.status).toBe(response.statusCode === 200 ? 'applied' : 'rejected');
        if (response.statusCode === 422) expect(answer.field).toMatch(/./);
      }),
      { numRuns: 400 },
    );
  });

  it('any text or bytes under any media type: a 4xx or a 200, never a 5xx', async () => {
    const payload = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 200 }),
      fc.uint8Array({ maxLength: 200 }).map((bytes) => Buffer.from(bytes)),
      fc.json({ maxDepth: 3 }).map((text) => text.replace(/[{[]/, (c) => `${c}"__proto__":{},`)),
    );
    const contentType = fc.constantFrom(
      'application/json',
      'application/json; charset=utf-8',
      'text/plain',
      'application/xml',
      'application/x-www-form-urlencoded',
    );
    await fc.assert(
      fc.asyncProperty(payload, contentType, async (body, type) => {
        const response = await post(body, type);
        expect(BODY_ANSWERS).toContain(response.statusCode);
      }),
      { numRuns: 300 },
    );
  });

  it('afterwards the receiver still answers, and no row exists without an applied delivery', async () => {
    expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    const orphans = await sql<{ n: number }>`
      select count(*)::int as n from feedback f where not exists (
        select 1 from webhook_events e
        where e.status = 'applied' and e.body->'id' = to_jsonb(f.id) and e.body->'feedback_id' = to_jsonb(f.feedback_id))`.execute(
      t.db,
    );
    expect(orphans.rows[0]?.n).toBe(0);
  });
});
