import type { Kysely } from 'kysely';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { createDb, createPool } from '../../src/db/connection.js';
import type { Database } from '../../src/db/database.js';
import type { WebhookServer } from '../../src/webhooks/server.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { count, feedbackBody, listen, MAIN_URL, postJson, receiver } from './webhook-helpers.js';

describe('persist before acknowledging: the database unreachable means 503, never a 2xx', () => {
  let t: TestDatabase;
  let proxy: TcpProxy;
  let pool: pg.Pool;
  let db: Kysely<Database>;
  let app: WebhookServer;

  beforeAll(async () => {
    t = await createTestDatabase();
    const target = new URL(t.url);
    proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    // The receiver reaches the database through the proxy; the test checks it directly (t.db).
    pool = createPool({ url: proxy.urlFor(t.url), schema: t.schema });
    db = createDb(pool);
    app = receiver(pool, { persistTimeoutMs: 800, readyTimeoutMs: 300 });
  });
  afterAll(async () => {
    await app.close();
    await db.destroy();
    await proxy.close();
    await t.drop();
  });

  it('database down: POST 503 with Retry-After, /readyz 503, /healthz 200; up again: 200', async () => {
    expect((await postJson(app, MAIN_URL, feedbackBody({ id: 1 }))).statusCode).toBe(200);
    await proxy.cut();

    const refused = await postJson(app, MAIN_URL, feedbackBody({ id: 2 }));
    expect(refused.statusCode).toBe(503);
    expect(refused.headers['retry-after']).toBe('5');
    expect(refused.json()).toEqual({ error: 'unavailable' });
    expect((await app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(503);
    expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);

    await proxy.restore();
    expect((await app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
    const retried = await postJson(app, MAIN_URL, feedbackBody({ id: 2 }));
    expect(retried.statusCode).toBe(200);
    const ids = await t.db.selectFrom('feedback').select('id').orderBy('id').execute();
    expect(ids.map((r) => r.id)).toEqual([1, 2]);
  });

  it('a database that accepts connections and never answers: 503 after the persist timeout', async () => {
    // Drop the pooled connections (and give the pool a moment to notice), then accept and stall new ones.
    await proxy.cut();
    await new Promise((resolve) => setTimeout(resolve, 50));
    await proxy.restore();
    proxy.hang();
    const started = Date.now();
    const response = await postJson(app, MAIN_URL, feedbackBody({ id: 3 }));
    expect(response.statusCode).toBe(503);
    // persistTimeoutMs is 800: the answer waits for it, and not much longer.
    expect(Date.now() - started).toBeGreaterThanOrEqual(750);
    expect(Date.now() - started).toBeLessThan(5000);
    expect((await app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(503);
    await proxy.cut();
    await proxy.restore();
  });

  it('cut while deliveries are in flight: every acknowledged delivery is stored, the others answer 503', async () => {
    const server = receiver(pool);
    onTestFinished(() => server.close());
    const base = await listen(server);
    const url = `${base}${MAIN_URL}`;
    const ids = Array.from({ length: 120 }, (_, i) => 10_000 + i);
    const statuses = new Map<number, number>();
    let acknowledged = 0;
    const send = async (id: number) => {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(feedbackBody({ id })),
      }).catch(() => undefined);
      statuses.set(id, response?.status ?? 0);
      if (response?.status === 200) acknowledged += 1;
    };
    // Six senders; the database goes away after 30 acknowledgements and comes back 300 ms later.
    const queue = [...ids];
    const cutter = (async () => {
      while (acknowledged < 30 && queue.length > 0) await new Promise((resolve) => setTimeout(resolve, 2));
      await proxy.cut();
      await new Promise((resolve) => setTimeout(resolve, 300));
      await proxy.restore();
    })();
    await Promise.all(
      Array.from({ length: 6 }, async () => {
        for (let id = queue.shift(); id !== undefined; id = queue.shift()) await send(id);
      }),
    );
    await cutter;

    const answered = [...statuses.values()];
    expect(new Set(answered)).toEqual(new Set([200, 503]));
    const stored = new Set(
      (await t.db.selectFrom('feedback').select('id').where('id', '>=', 10_000).execute()).map((r) => r.id),
    );
    const events = await count(t, 'webhook_events');
    for (const [id, status] of statuses) {
      if (status === 200) expect(stored.has(id), `acknowledged ${id}`).toBe(true);
    }

    // The sender retries what was not acknowledged: all arrive, each once.
    for (const [id, status] of statuses) if (status !== 200) await send(id);
    expect([...statuses.values()].every((status) => status === 200)).toBe(true);
    expect(await t.db.selectFrom('feedback').select('id').where('id', '>=', 10_000).execute()).toHaveLength(
      ids.length,
    );
    expect(await count(t, 'webhook_events')).toBe(events + ids.length - stored.size);
  });
});

describe('a database that is not there at all', () => {
  it('answers 503 to deliveries and to /readyz', async () => {
    // A port nothing listens on: the pool's connections are refused.
    const probe = await startTcpProxy({ host: '127.0.0.1', port: 1 });
    const url = probe.urlFor('postgres://postgres@127.0.0.1:5432/nowhere');
    await probe.close();
    const pool = createPool({ url, schema: 'insights' });
    const app = receiver(pool);
    try {
      expect((await postJson(app, MAIN_URL, feedbackBody())).statusCode).toBe(503);
      expect((await app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(503);
    } finally {
      await app.close();
      await pool.end();
    }
  });
});
