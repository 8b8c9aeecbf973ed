import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { forget } from '../../src/privacy/forget-visitor.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import {
  capturingLogger,
  feedbackBody,
  MAIN_URL,
  OTHER_TOKEN,
  postJson,
  receiver,
  visitor,
  writtenRows,
} from './webhook-helpers.js';

/**
 * The receiver's last findings: a per-source rate limit, non-UTF-8 charsets refused,
 * no PostgreSQL text in an answer, and an honest answer for a forgotten visitor's delivery.
 */

interface LogLine {
  level: number;
  msg: string;
  refused?: Record<string, number>;
  [key: string]: unknown;
}

const parseLines = (text: string): LogLine[] =>
  text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as LogLine);

const SHOP_URL = `/webhooks/shop/${OTHER_TOKEN}`;
/** inject() connects from 127.0.0.1, the trusted proxy; this address is on shop's allow-list. */
const FROM_SHOP = { 'x-forwarded-for': '10.1.2.3' };

describe('INSIGHTS_WEBHOOK_RATE_LIMIT: deliveries per minute, per source', () => {
  let t: TestDatabase;

  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(async () => {
    await t.drop();
  });

  it('one source over its limit gets 429 with Retry-After, before its body is read; another source is unaffected', async () => {
    const logs = capturingLogger();
    const app = receiver(t.pool, { rateLimitPerMinute: 3, trustedProxy: ['127.0.0.1'], logger: logs.logger });
    try {
      // Requests without the token count against no one's allowance.
      for (let i = 0; i < 5; i += 1)
        expect((await postJson(app, `/webhooks/main/${OTHER_TOKEN}`, feedbackBody())).statusCode).toBe(404);
      const main = [];
      for (let id = 1; id <= 5; id += 1) main.push(await postJson(app, MAIN_URL, feedbackBody({ id })));
      expect(main.map((r) => r.statusCode)).toEqual([200, 200, 200, 429, 429]);
      const limited = main[3];
      expect(limited?.json()).toEqual({ error: 'rate_limited' });
      expect(Number(limited?.headers['retry-after'])).toBeGreaterThan(0);
      expect(Number(limited?.headers['retry-after'])).toBeLessThanOrEqual(60);
      expect(limited?.headers.connection).toBe('close');
      // Not even parsed: malformed JSON is 429, not 400.
      expect((await postJson(app, MAIN_URL, '{not json')).statusCode).toBe(429);

      // The other source, from the same address, has its own allowance.
      const shop = [];
      for (let id = 11; id <= 13; id += 1)
        shop.push(await postJson(app, SHOP_URL, feedbackBody({ id }), FROM_SHOP));
      expect(shop.map((r) => r.statusCode)).toEqual([200, 200, 200]);
      expect((await postJson(app, SHOP_URL, feedbackBody({ id: 14 }), FROM_SHOP)).statusCode).toBe(429);
      // The probes are never limited.
      for (let i = 0; i < 5; i += 1) expect((await app.inject({ url: '/healthz' })).statusCode).toBe(200);
    } finally {
      await app.close();
    }
    expect(await writtenRows(t)).toMatchObject({ webhook_events: 6, feedback: 6 });
    // Refusals are counted in the aggregated line, not written one by one.
    const warnings = parseLines(logs.lines()).filter((line) => line.level >= 40);
    expect(warnings.map((line) => line.msg)).toEqual(['requests refused']);
    expect(warnings[0]?.refused).toEqual({ '404': 5, '429': 4 });
  });

  it('unset: no limit', async () => {
    const app = receiver(t.pool);
    try {
      const statuses = [];
      for (let id = 100; id < 130; id += 1)
        statuses.push((await postJson(app, MAIN_URL, feedbackBody({ id }))).statusCode);
      expect(new Set(statuses)).toEqual(new Set([200]));
    } finally {
      await app.close();
    }
  });
});

describe('charsets: JSON is UTF-8', () => {
  let t: TestDatabase;
  let app: ReturnType<typeof receiver>;

  beforeAll(async () => {
    t = await createTestDatabase();
    app = receiver(t.pool);
  });
  afterAll(async () => {
    await app.close();
    await t.drop();
  });
  beforeEach(async () => {
    await sql`truncate webhook_events, feedback, survey_answers, visitors, sources cascade`.execute(t.db);
  });

  it('415 for any other charset, before the body is read; nothing stored', async () => {
    for (const contentType of [
      'application/json; charset=latin1',
      'application/json; charset=ISO-8859-1',
      'application/json;charset="windows-1252"',
      'application/json; charset=utf-16',
      'application/json; charset=us-ascii',
    ]) {
      const response = await postJson(app, MAIN_URL, feedbackBody(), { 'content-type': contentType });
      expect(response.statusCode, contentType).toBe(415);
      expect(response.json()).toEqual({ error: 'unsupported_charset', expected: 'utf-8' });
      expect(response.headers.connection).toBe('close');
      // Refused before parsing: a malformed body gets the same answer.
      const broken = await postJson(app, MAIN_URL, '{not json', { 'content-type': contentType });
      expect(broken.statusCode, contentType).toBe(415);
    }
    expect(await writtenRows(t)).toMatchObject({ webhook_events: 0, feedback: 0 });
  });

  it('UTF-8 however written, or no charset at all, is accepted', async () => {
    const types = [
      'application/json',
      'application/json; charset=utf-8',
      'application/json; charset=UTF-8',
      'application/json; charset=UTF8',
      'application/json;charset="utf-8"',
    ];
    for (const [i, contentType] of types.entries()) {
      const response = await postJson(app, MAIN_URL, feedbackBody({ id: 500 + i }), {
        'content-type': contentType,
      });
      expect(response.statusCode, contentType).toBe(200);
    }
    expect(await writtenRows(t)).toMatchObject({ webhook_events: types.length, feedback: types.length });
  });
});

describe('a value PostgreSQL refuses: the answer names no database text', () => {
  it('422 with a fixed sentence; the stored error too; the log has the SQLSTATE and no body content', async () => {
    const t = await createTestDatabase();
    const logs = capturingLogger();
    const app = receiver(t.pool, { logger: logs.logger });
    try {
      // The schema lets year 0 through; PostgreSQL's timestamptz does not (22008).
      const created = '0000-01-01T00:00:00.000Z';
      const body = feedbackBody({ id: 77, visitor: { ...visitor(), created_at: created } });
      const response = await postJson(app, MAIN_URL, body);
      expect(response.statusCode).toBe(422);
      expect(response.json()).toEqual({
        error: 'invalid_body',
        field: '(body)',
        message: 'the database refused a value of this body (one beyond what its column can hold, say)',
        issues: [
          {
            field: '(body)',
            message: 'the database refused a value of this body (one beyond what its column can hold, say)',
          },
        ],
        event_id: expect.any(Number),
        duplicate: false,
      });
      const postgresWording =
        /date\/time|field value|out of range|violates|relation|constraint|SQLSTATE|22008|0000-01-01/i;
      expect(response.body).not.toMatch(postgresWording);
      const stored = await t.db.selectFrom('webhook_events').select('error').executeTakeFirstOrThrow();
      expect(stored.error).not.toMatch(postgresWording);

      const refusal = parseLines(logs.lines()).find(
        (line) => line.msg === 'delivery refused by the database; stored as rejected',
      );
      expect(refusal).toMatchObject({ level: 40, code: '22008', source: 'main' });
      expect(logs.lines()).not.toContain(created);
      expect(logs.lines()).not.toContain('Checkout was quick');
    } finally {
      await app.close();
      await t.drop();
    }
  });
});

describe('a delivery of a forgotten visitor', () => {
  it('is answered 200 `suppressed` with no event id, valid or not, and nothing of it is stored', async () => {
    const t = await createTestDatabase();
    const app = receiver(t.pool);
    try {
      expect((await postJson(app, MAIN_URL, feedbackBody({ id: 1 }))).statusCode).toBe(200);
      await forget(t.db, { visitorId: visitor().id });
      const before = await writtenRows(t);
      for (const body of [
        feedbackBody({ id: 2 }),
        { type: 'feedback', id: 'x', visitor: { id: visitor().id } },
      ]) {
        const response = await postJson(app, MAIN_URL, body);
        expect(response.statusCode).toBe(200);
        expect(response.json()).toEqual({ status: 'suppressed', event_id: null, duplicate: false });
      }
      expect(await writtenRows(t)).toEqual(before);
      // Another visitor's delivery is applied as ever.
      const other = await postJson(app, MAIN_URL, feedbackBody({ id: 3, visitor: visitor('v-other') }));
      expect(other.json()).toMatchObject({ status: 'applied', duplicate: false });
    } finally {
      await app.close();
      await t.drop();
    }
  });
});
