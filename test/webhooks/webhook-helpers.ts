import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { sql } from 'kysely';
import type pg from 'pg';
import { pino } from 'pino';
import { withClient } from '../../scripts/dev-database/admin.js';
import type { SourceConfig } from '../../src/config/source-config.js';
import { searchPath } from '../../src/db/bookkeeping.js';
import { type Logger, silentLogger } from '../../src/log/logger.js';
import type { FeedbackWebhook, SurveyWebhook } from '../../src/schemas/webhook.js';
import {
  createWebhookServer,
  type WebhookServer,
  type WebhookServerOptions,
} from '../../src/webhooks/server.js';
import type { TestDatabase } from '../helpers/database.js';

/** Long enough for loadConfig; a canary: no log line and no table may ever contain it. */
export const TOKEN = 'CANARY-tok-0123456789abcdefghijkl';
export const OTHER_TOKEN = 'CANARY-other-9876543210zyxwvutsrq';

export const SOURCES: SourceConfig[] = [
  { name: 'main', baseUrl: 'http://api.example.test', apiKey: 'key', webhookToken: TOKEN },
  {
    name: 'shop',
    baseUrl: 'http://shop.example.test',
    apiKey: 'key',
    webhookToken: OTHER_TOKEN,
    allowedIps: ['10.1.0.0/16'],
  },
  // Configured for the API only: it has no webhook address.
  { name: 'apionly', baseUrl: 'http://api.example.test', apiKey: 'key' },
];

export const MAIN_URL = `/webhooks/main/${TOKEN}`;

/** A receiver for SOURCES (16 KiB body limit), not listening yet: inject() or listen(). */
export function receiver(pool: pg.Pool, options: Partial<WebhookServerOptions> = {}): WebhookServer {
  return createWebhookServer({
    pool,
    logger: silentLogger(),
    sources: SOURCES,
    bodyLimit: 16 * 1024,
    ...options,
  });
}

/** Listens on a free loopback port; returns its base URL. */
export async function listen(app: WebhookServer): Promise<string> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
}

export function visitor(id = 'v-1') {
  return {
    id,
    name: 'Ada',
    company: '',
    email: 'ada@example.test',
    ip: '192.0.2.1',
    user_agent: 'Mozilla/5.0',
    landing_page: 'https://shop.example.test/',
    ref_page: '',
    created_at: '2026-03-01T10:00:00.000Z',
    device: 'desktop',
    browser: 'Firefox',
    os: 'Linux',
  };
}

export function feedbackBody(overrides: Partial<FeedbackWebhook> = {}): FeedbackWebhook {
  return {
    id: 1001,
    feedback_id: 7,
    type: 'feedback',
    question: 'How was your visit?',
    comment: 'Checkout was quick',
    session: 's-1',
    screenshot: 'https://cdn.example.test/1001.png',
    visitor: visitor(),
    ...overrides,
  };
}

export function surveyBody(overrides: Partial<SurveyWebhook> = {}): SurveyWebhook {
  return {
    id: 2001,
    question_id: 3,
    type: 'survey',
    question: 'What brought you here?',
    answer: 'A friend',
    session: 's-2',
    visitor: visitor('v-2'),
    ...overrides,
  };
}

export function postJson(
  app: WebhookServer,
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
) {
  return app.inject({
    method: 'POST',
    url,
    headers: { 'content-type': 'application/json', ...headers },
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

export async function count(t: TestDatabase, table: string): Promise<number> {
  const result = await sql<{ n: number }>`select count(*)::int as n from ${sql.table(table)}`.execute(t.db);
  return result.rows[0]?.n ?? -1;
}

/** Rows of every table a delivery can write: nothing may change on a refused request. */
export async function writtenRows(t: TestDatabase): Promise<Record<string, number>> {
  const tables = ['webhook_events', 'feedback', 'survey_answers', 'visitors', 'sources'];
  return Object.fromEntries(await Promise.all(tables.map(async (table) => [table, await count(t, table)])));
}

/** A logger writing every line (level trace) into memory, for tests that read the logs. */
export function capturingLogger(): { logger: Logger; lines: () => string } {
  let text = '';
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      text += chunk.toString();
      done();
    },
  });
  return { logger: pino({ level: 'trace' }, sink), lines: () => text };
}

/** Runs `fn` while another session holds `webhook_events` locked; every insert into it waits. */
export async function whileLocked<T>(
  t: TestDatabase,
  fn: (waiting: () => Promise<number>) => Promise<T>,
): Promise<T> {
  return withClient(t.url, async (blocker: pg.Client) => {
    await blocker.query(`set search_path = ${searchPath(t.schema)}`);
    await blocker.query('begin');
    await blocker.query('lock table webhook_events in exclusive mode');
    const waiting = async () => {
      const result = await blocker.query<{ n: number }>(
        `select count(*)::int as n from pg_locks where not granted and relation = 'webhook_events'::regclass
           and database = (select oid from pg_database where datname = current_database())`,
      );
      return result.rows[0]?.n ?? 0;
    };
    try {
      return await fn(waiting);
    } finally {
      await blocker.query('commit');
    }
  });
}

export async function post(base: string, body: unknown): Promise<number> {
  const response = await fetch(`${base}${MAIN_URL}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  }).catch(() => undefined);
  return response?.status ?? 0;
}
