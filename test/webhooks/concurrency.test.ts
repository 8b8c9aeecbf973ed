import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import type { WebhookServer } from '../../src/webhooks/server.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst, simulatorSource } from '../helpers/sync-harness.js';
import { truthItems, warehouseItems } from '../helpers/warehouse-truth.js';
import { count, feedbackBody, listen, MAIN_URL, receiver, SOURCES, TOKEN } from './webhook-helpers.js';

interface Answer {
  status: number;
  body: { event_id?: number; duplicate?: boolean };
}

async function post(url: string, body: unknown): Promise<Answer> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Answer['body'] };
}

describe('concurrent copies of one delivery', () => {
  let t: TestDatabase;
  let app: WebhookServer;
  let url: string;

  beforeAll(async () => {
    t = await createTestDatabase();
    app = receiver(t.pool);
    url = `${await listen(app)}${MAIN_URL}`;
  });
  afterAll(async () => {
    await app.close();
    await t.drop();
  });
  beforeEach(async () => {
    await sql`truncate webhook_events, feedback, survey_answers, visitors, sources cascade`.execute(t.db);
  });

  it('25 copies at once: all 200 with one event id, one stored delivery counted 25 times, one row', async () => {
    const answers = await Promise.all(Array.from({ length: 25 }, () => post(url, feedbackBody())));
    expect(answers.map((a) => a.status)).toEqual(Array(25).fill(200));
    expect(new Set(answers.map((a) => a.body.event_id)).size).toBe(1);
    expect(answers.filter((a) => a.body.duplicate === false)).toHaveLength(1);
    const event = await t.db.selectFrom('webhook_events').select(['delivery_count', 'status']).execute();
    expect(event).toEqual([{ delivery_count: 25, status: 'applied' }]);
    expect(await count(t, 'feedback')).toBe(1);
    expect(await count(t, 'visitors')).toBe(1);
  });

  it('copies of a rejected body at once: all 422, one stored delivery', async () => {
    const body = { ...feedbackBody(), feedback_id: 'seven' };
    const answers = await Promise.all(Array.from({ length: 10 }, () => post(url, body)));
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(422));
    expect(await count(t, 'webhook_events')).toBe(1);
    expect(await count(t, 'feedback')).toBe(0);
  });

  it('two different bodies for one key at once: both stored, one row, holding one of them whole', async () => {
    const first = feedbackBody({ comment: 'first', session: 's-first' });
    const second = feedbackBody({ comment: 'second', session: 's-second' });
    const answers = await Promise.all([post(url, first), post(url, second)]);
    expect(answers.map((a) => a.status)).toEqual([200, 200]);
    expect(await count(t, 'webhook_events')).toBe(2);
    const rows = await t.db.selectFrom('feedback').select(['comment', 'session', 'origin']).execute();
    expect(rows).toHaveLength(1);
    // The first to commit wins; the other only fills columns that are still null (none are).
    expect([
      { comment: 'first', session: 's-first', origin: 'webhook' },
      { comment: 'second', session: 's-second', origin: 'webhook' },
    ]).toContainEqual(rows[0]);
  });
});

describe('webhooks arriving while the API sync loads the same days', () => {
  let t: TestDatabase;
  let sim: Simulator;
  let app: WebhookServer;

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 9, from: '2026-03-01', to: '2026-03-06', cap: 4000, latencyMs: 5 });
    app = receiver(t.pool, {
      sources: [{ ...simulatorSource(sim), webhookToken: TOKEN }, ...SOURCES.slice(1)],
    });
  });
  afterAll(async () => {
    await app.close();
    await sim.stop();
    await t.drop();
  });

  it('end up exactly as the API says, every row seen by both, no deadlock, no lost delivery', async () => {
    const url = `${await listen(app)}${MAIN_URL}`;
    const [run, sent] = await Promise.all([
      runAgainst(t, sim, { now: new Date('2026-03-07T05:00:00.000Z') }),
      sim.sendWebhooks(url),
    ]);
    expect(run.status).toBe('ok');
    expect(new Set(sent.statuses)).toEqual(new Set([200]));
    expect(await warehouseItems(t)).toEqual(truthItems(sim.truth()));
    const origins = await sql<{ origin: string; n: number }>`
      select origin, count(*)::int as n from (
        select origin from feedback union all select origin from survey_answers) o group by origin`.execute(
      t.db,
    );
    expect(origins.rows).toEqual([{ origin: 'both', n: sent.sent }]);
    expect(await count(t, 'webhook_events')).toBe(sent.sent);
  });
});
