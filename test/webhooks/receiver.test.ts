import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { SourceConfig } from '../../src/config/source-config.js';
import type { WebhookServer } from '../../src/webhooks/server.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import {
  count,
  feedbackBody,
  MAIN_URL,
  OTHER_TOKEN,
  postJson,
  receiver,
  SOURCES,
  surveyBody,
  TOKEN,
  writtenRows,
} from './webhook-helpers.js';

describe('POST /webhooks/<source>/<token>: every answer', () => {
  let t: TestDatabase;
  let app: WebhookServer;

  beforeAll(async () => {
    t = await createTestDatabase();
    app = receiver(t.pool, { trustedProxy: ['127.0.0.1'] });
  });
  afterAll(async () => {
    await app.close();
    await t.drop();
  });
  beforeEach(async () => {
    await sql`truncate webhook_events, feedback, survey_answers, visitors, sources cascade`.execute(t.db);
  });

  it('200: stores the delivery and writes a provisional feedback row and its visitor', async () => {
    const response = await postJson(app, MAIN_URL, feedbackBody());
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ status: 'applied', event_id: expect.any(Number), duplicate: false });

    const event = await t.db.selectFrom('webhook_events').selectAll().executeTakeFirstOrThrow();
    expect(event).toMatchObject({
      source_id: 'main',
      type: 'feedback',
      status: 'applied',
      error: null,
      body: feedbackBody(),
      body_text: null,
      delivery_count: 1,
    });
    expect(event.applied_at).toBeInstanceOf(Date);
    const row = await t.db.selectFrom('feedback').selectAll().executeTakeFirstOrThrow();
    expect(row).toMatchObject({
      source_id: 'main',
      id: 1001,
      feedback_id: 7,
      question: 'How was your visit?',
      comment: 'Checkout was quick',
      session: 's-1',
      screenshot: 'https://cdn.example.test/1001.png',
      visitor_id: 'v-1',
      origin: 'webhook',
      // Spec 6: the webhook carries none of these; the API sync fills them.
      dt: null,
      url: null,
      rating: null,
      rating_text: null,
      raw: feedbackBody(),
    });
    const visitor = await t.db
      .selectFrom('visitors')
      .select(['id', 'name', 'email'])
      .executeTakeFirstOrThrow();
    expect(visitor).toEqual({ id: 'v-1', name: 'Ada', email: 'ada@example.test' });
  });

  it('200: a survey answer goes to survey_answers with `answer` in comment', async () => {
    const response = await postJson(app, MAIN_URL, surveyBody());
    expect(response.statusCode).toBe(200);
    const row = await t.db.selectFrom('survey_answers').selectAll().executeTakeFirstOrThrow();
    expect(row).toMatchObject({
      id: 2001,
      question_id: 3,
      comment: 'A friend',
      origin: 'webhook',
      dt: null,
      url: null,
    });
  });

  it('200 again for a duplicate delivery: one stored row, counted twice, whatever the key order', async () => {
    const first = await postJson(app, MAIN_URL, feedbackBody());
    // Same content, keys in another order and other whitespace: the same delivery.
    const reordered = `{ "visitor": ${JSON.stringify(feedbackBody().visitor)}, ${JSON.stringify(feedbackBody()).slice(1)}`;
    const second = await postJson(app, MAIN_URL, reordered);
    expect(second.statusCode).toBe(200);
    expect(second.json()).toEqual({ status: 'applied', event_id: first.json().event_id, duplicate: true });
    expect(await count(t, 'webhook_events')).toBe(1);
    expect(await count(t, 'feedback')).toBe(1);
    const event = await t.db.selectFrom('webhook_events').select('delivery_count').executeTakeFirstOrThrow();
    expect(event.delivery_count).toBe(2);
  });

  it("404: a wrong token, or another source's token, writes nothing", async () => {
    for (const url of [`/webhooks/main/${TOKEN}x`, `/webhooks/main/${OTHER_TOKEN}`, '/webhooks/main/short']) {
      const response = await postJson(app, url, feedbackBody());
      expect(response.statusCode, url).toBe(404);
      expect(response.json()).toEqual({ error: 'not_found' });
    }
    expect(await writtenRows(t)).toEqual({
      webhook_events: 0,
      feedback: 0,
      survey_answers: 0,
      visitors: 0,
      sources: 0,
    });
  });

  it('404 comes before the body is looked at: a wrong token with a malformed or huge body is still 404', async () => {
    expect((await postJson(app, '/webhooks/main/wrong', '{not json')).statusCode).toBe(404);
    expect((await postJson(app, '/webhooks/main/wrong', 'x'.repeat(64 * 1024))).statusCode).toBe(404);
  });

  it('one answer for an unknown source and a wrong token: same status, body and headers, so no name can be probed', async () => {
    const answers = await Promise.all(
      [
        `/webhooks/nope/${TOKEN}`, // no such source
        `/webhooks/apionly/${TOKEN}`, // a source without a webhook address
        `/webhooks/main/${OTHER_TOKEN}`, // a known source, a wrong token
        // A known source with an allow-list, a wrong token, a sender not on the list: still 404,
        // the allow-list is only looked at once the token matched.
        `/webhooks/shop/${TOKEN}`,
      ].map((url) => postJson(app, url, feedbackBody(), { 'x-forwarded-for': '10.9.9.9' })),
    );
    const seen = answers.map((answer) => {
      const { date: _date, ...headers } = answer.headers;
      return { status: answer.statusCode, body: answer.body, headers };
    });
    expect(seen[0]).toEqual({
      status: 404,
      body: '{"error":"not_found"}',
      headers: expect.objectContaining({ connection: 'close' }),
    });
    for (const other of seen.slice(1)) expect(other).toEqual(seen[0]);
  });

  it('200 with the longest token the configuration allows (256 characters)', async () => {
    const longToken = 'L'.repeat(256);
    const long = receiver(t.pool, {
      sources: [{ ...SOURCES[0], name: 'long', webhookToken: longToken } as SourceConfig],
    });
    try {
      expect((await postJson(long, `/webhooks/long/${longToken}`, feedbackBody())).statusCode).toBe(200);
      expect((await postJson(long, `/webhooks/long/${longToken.slice(1)}`, feedbackBody())).statusCode).toBe(
        404,
      );
    } finally {
      await long.close();
    }
  });

  it('404: an unknown source, a source without a token, other paths and methods', async () => {
    for (const url of [
      `/webhooks/nope/${TOKEN}`,
      `/webhooks/apionly/${TOKEN}`,
      `/webhooks/main`,
      `/hooks/main/${TOKEN}`,
    ]) {
      expect((await postJson(app, url, feedbackBody())).statusCode, url).toBe(404);
    }
    expect((await app.inject({ method: 'GET', url: MAIN_URL })).statusCode).toBe(404);
    expect(await count(t, 'webhook_events')).toBe(0);
  });

  it('403: a source with an allow-list refuses other addresses, believing X-Forwarded-For only from the trusted proxy', async () => {
    const url = `/webhooks/shop/${OTHER_TOKEN}`;
    // inject() connects from 127.0.0.1, the trusted proxy: its X-Forwarded-For names the client.
    const allowed = await postJson(app, url, feedbackBody(), { 'x-forwarded-for': '10.1.2.3' });
    expect(allowed.statusCode).toBe(200);
    const refused = await postJson(app, url, feedbackBody({ id: 1002 }), { 'x-forwarded-for': '10.2.0.1' });
    expect(refused.statusCode).toBe(403);
    // Without the header the client is the proxy itself, which is not on the list.
    expect((await postJson(app, url, feedbackBody({ id: 1003 }))).statusCode).toBe(403);

    const untrusting = receiver(t.pool);
    try {
      // No trusted proxy: a forged X-Forwarded-For is ignored, the peer (127.0.0.1) is refused.
      const forged = await postJson(untrusting, url, feedbackBody({ id: 1004 }), {
        'x-forwarded-for': '10.1.2.3',
      });
      expect(forged.statusCode).toBe(403);
    } finally {
      await untrusting.close();
    }
    expect(await count(t, 'feedback')).toBe(1);
  });

  it('415: any media type but JSON, and a POST with no body at all', async () => {
    const cases = [
      { 'content-type': 'text/plain' },
      { 'content-type': 'application/x-www-form-urlencoded' },
      { 'content-type': 'multipart/form-data; boundary=x' },
    ];
    for (const headers of cases) {
      const response = await app.inject({
        method: 'POST',
        url: MAIN_URL,
        headers,
        payload: JSON.stringify(feedbackBody()),
      });
      expect(response.statusCode, headers['content-type']).toBe(415);
      expect(response.json()).toMatchObject({ error: 'unsupported_media_type' });
    }
    expect((await app.inject({ method: 'POST', url: MAIN_URL })).statusCode).toBe(415);
    // application/json with a charset parameter is JSON.
    const withCharset = await postJson(app, MAIN_URL, feedbackBody(), {
      'content-type': 'application/json; charset=utf-8',
    });
    expect(withCharset.statusCode).toBe(200);
  });

  it('413: a body over the limit, refused before it is parsed (even when it is not JSON)', async () => {
    const big = feedbackBody({ comment: 'x'.repeat(17 * 1024) });
    const response = await postJson(app, MAIN_URL, big);
    expect(response.statusCode).toBe(413);
    expect(response.json()).toEqual({ error: 'body_too_large', limit: 16 * 1024 });
    expect((await postJson(app, MAIN_URL, `{${'x'.repeat(17 * 1024)}`)).statusCode).toBe(413);
    expect(await count(t, 'webhook_events')).toBe(0);
  });

  it('400: malformed JSON, an empty body, prototype and constructor poisoning; nothing stored', async () => {
    const poisoned = JSON.stringify(feedbackBody()).replace('{', '{"__proto__":{"admin":true},');
    const constructorPoisoned = JSON.stringify(feedbackBody()).replace(
      '{',
      '{"constructor":{"prototype":{"admin":true}},',
    );
    for (const payload of ['{"type": "feedback",', 'null null', '', poisoned, constructorPoisoned]) {
      const response = await postJson(app, MAIN_URL, payload);
      expect(response.statusCode, payload.slice(0, 40)).toBe(400);
      expect(response.json()).toMatchObject({ error: 'malformed_json' });
    }
    expect(({} as Record<string, unknown>).admin).toBeUndefined();
    // Deeper than any webhook, and deep enough to overflow recursive code: refused, not stored.
    const deep = `${'['.repeat(5000)}${']'.repeat(5000)}`;
    expect((await postJson(app, MAIN_URL, deep)).statusCode).toBe(400);
    expect(await count(t, 'webhook_events')).toBe(0);
  });

  it('422: a body that fails its schema names the field and is kept, rejected, for inspection', async () => {
    const body = { ...feedbackBody(), visitor: { ...feedbackBody().visitor, created_at: 'yesterday' } };
    const response = await postJson(app, MAIN_URL, body);
    expect(response.statusCode).toBe(422);
    expect(response.json()).toMatchObject({
      error: 'invalid_body',
      field: 'visitor.created_at',
      event_id: expect.any(Number),
    });
    const event = await t.db.selectFrom('webhook_events').selectAll().executeTakeFirstOrThrow();
    expect(event).toMatchObject({ status: 'rejected', type: 'feedback', body, applied_at: null });
    expect(event.error).toMatch(/^visitor\.created_at: /);
    expect(await count(t, 'feedback')).toBe(0);
    expect(await count(t, 'visitors')).toBe(0);
  });

  it('422: an unknown or missing type, and JSON that is not an object; each kept', async () => {
    const cases: Array<[unknown, string]> = [
      [{ ...feedbackBody(), type: 'refund' }, 'type'],
      [{ id: 1 }, 'type'],
      [[feedbackBody()], '(body)'],
      ['"feedback"', '(body)'],
      [42, '(body)'],
      [null, '(body)'],
      [{ ...surveyBody(), answer: undefined }, 'answer'],
      [{ ...feedbackBody(), id: 1.5 }, 'id'],
    ];
    for (const [body, field] of cases) {
      const response = await postJson(app, MAIN_URL, typeof body === 'string' ? body : JSON.stringify(body));
      expect(response.statusCode, JSON.stringify(body)).toBe(422);
      expect(response.json().field, JSON.stringify(body)).toBe(field);
    }
    const events = await t.db.selectFrom('webhook_events').select(['type', 'status']).orderBy('id').execute();
    expect(events).toHaveLength(cases.length);
    expect(events.every((e) => e.status === 'rejected')).toBe(true);
    expect(events[0]?.type).toBe('refund');
    expect(await count(t, 'feedback')).toBe(0);
  });

  it('422: a string PostgreSQL cannot hold (U+0000, a lone surrogate) names the field; the body is kept as text', async () => {
    for (const [comment, field] of [
      ['nul \u0000 inside', 'comment'],
      ['half \ud83d of an emoji', 'comment'],
    ] as const) {
      const response = await postJson(app, MAIN_URL, feedbackBody({ comment }));
      expect(response.statusCode).toBe(422);
      expect(response.json()).toMatchObject({ field, message: expect.stringContaining('cannot store') });
    }
    const events = await t.db.selectFrom('webhook_events').select(['body', 'body_text', 'status']).execute();
    expect(events).toHaveLength(2);
    for (const event of events) {
      expect(event.body).toBeNull();
      expect(event.status).toBe('rejected');
      expect(JSON.parse(event.body_text ?? '')).toMatchObject({ id: 1001 });
    }
    expect(await count(t, 'feedback')).toBe(0);
  });

  it('422: a U+0000 in a key or in the type is kept too, replaced by U+FFFD in the columns that name it', async () => {
    const oddKey = await postJson(app, MAIN_URL, { ...feedbackBody(), 'x\u0000': 1 });
    expect(oddKey.statusCode).toBe(422);
    expect(oddKey.json().field).toBe('x\ufffd');
    const oddType = await postJson(app, MAIN_URL, { ...feedbackBody(), type: 'feed\u0000back' });
    expect(oddType.statusCode).toBe(422);
    const events = await t.db
      .selectFrom('webhook_events')
      .select(['type', 'error', 'body_text'])
      .orderBy('id')
      .execute();
    expect(events.map((e) => e.type)).toEqual(['feedback', 'feed\ufffdback']);
    expect(events[0]?.error).toMatch(/^x\ufffd: /);
    expect(events.every((e) => e.body_text?.includes('\\u0000'))).toBe(true);
  });

  it('422: a value the schema allows but PostgreSQL refuses (year 0) is kept as rejected, nothing half-written', async () => {
    const body = feedbackBody({
      visitor: { ...feedbackBody().visitor, created_at: '0000-01-01T00:00:00.000Z' },
    });
    const response = await postJson(app, MAIN_URL, body);
    expect(response.statusCode).toBe(422);
    expect(response.json().message).toMatch(/database refused a value/);
    const again = await postJson(app, MAIN_URL, body);
    expect(again.json()).toMatchObject({ duplicate: true, event_id: response.json().event_id });
    expect(await writtenRows(t)).toMatchObject({ webhook_events: 1, feedback: 0, visitors: 0 });
    const event = await t.db
      .selectFrom('webhook_events')
      .select(['status', 'delivery_count'])
      .executeTakeFirstOrThrow();
    expect(event).toEqual({ status: 'rejected', delivery_count: 2 });
  });

  it('a redelivery of a rejected body gets the same 422 and stays one row', async () => {
    const body = { ...feedbackBody(), type: 'refund' };
    const first = await postJson(app, MAIN_URL, body);
    const second = await postJson(app, MAIN_URL, body);
    expect(second.statusCode).toBe(422);
    expect(second.json()).toEqual({ ...first.json(), duplicate: true });
    expect(await count(t, 'webhook_events')).toBe(1);
  });

  it('GET /healthz and /readyz answer 200 while the database is up', async () => {
    expect((await app.inject({ method: 'GET', url: '/healthz' })).json()).toEqual({ status: 'ok' });
    const ready = await app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(200);
    expect(ready.json()).toEqual({ status: 'ready' });
  });
});
