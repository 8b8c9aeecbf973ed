import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiClient } from '../../src/api/api-client.js';
import { createDb, createPool } from '../../src/db/connection.js';
import type { Database } from '../../src/db/database.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst } from '../helpers/sync-harness.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { truthItems, warehouseItems } from '../helpers/warehouse-truth.js';
import { feedbackBody, listen, MAIN_URL, receiver } from '../webhooks/webhook-helpers.js';
import { watchUnhandled } from './unhandled.js';

/**
 * Guarantee 4: the database connection reset or stalled during a sync and during a webhook
 * burst, through a TCP proxy on loopback between the pool and PostgreSQL. No crash, no unhandled
 * rejection; webhooks answer 503 and never acknowledge what is not stored; the sync's failed
 * windows are taken again by the next run; after recovery, 0 rows lost and 0 duplicated.
 */

const FROM = '2026-03-01';
const TO = '2026-03-20';
const NOW = new Date('2026-03-21T05:00:00.000Z');

describe('database faults', () => {
  let t: TestDatabase;
  let proxy: TcpProxy;
  let pool: pg.Pool;
  let db: Kysely<Database>;
  let sim: Simulator;
  const unhandled = watchUnhandled();
  /** The warehouse as the tool sees it: through the proxy. The test checks through t.db. */
  const viaProxy = () => ({ ...t, pool, db });

  beforeAll(async () => {
    t = await createTestDatabase();
    const target = new URL(t.url);
    proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    pool = createPool({ url: proxy.urlFor(t.url), schema: t.schema });
    db = createDb(pool);
    sim = await startSimulator({ seed: 13, from: FROM, to: TO, cap: 4000, latencyMs: 5 });
  });
  afterAll(async () => {
    await sim.stop();
    await db.destroy();
    await proxy.close();
    await t.drop();
  });

  /** Counts of each windowed table and of its distinct keys: equal means no duplicate. */
  async function rowCounts() {
    const result = await sql<{ table: string; n: number; keys: number }>`
      select 'feedback' as table, count(*)::int as n, count(distinct (source_id, id, feedback_id))::int as keys from feedback
      union all select 'survey', count(*)::int, count(distinct (source_id, id, question_id))::int from survey_answers
      union all select 'recordings', count(*)::int, count(distinct (source_id, id))::int from recordings`.execute(
      t.db,
    );
    return result.rows;
  }

  it('reset in the middle of a sync: the run ends (partial), the next run retries what failed, nothing is lost or doubled', async () => {
    let requests = 0;
    let outageWindows = 0;
    const wrap = (client: ApiClient): ApiClient => ({
      ...client,
      window: async (resource, query, context) => {
        requests += 1;
        // The database goes away at the 12th day requested and comes back at the 40th.
        if (requests === 12) await proxy.cut();
        if (requests === 40) await proxy.restore();
        if (requests >= 12 && requests < 40) outageWindows += 1;
        return client.window(resource, query, context);
      },
    });
    const broken = await runAgainst(viaProxy(), sim, {
      now: NOW,
      sources: [{ name: 'main', baseUrl: sim.url, apiKey: sim.apiKey }],
      settings: { concurrency: 3 },
      wrapClient: wrap,
    });
    expect(outageWindows).toBeGreaterThan(10);
    expect(broken.status).toBe('partial');
    const failed = broken.windows.filter((w) => w.status === 'failed');
    expect(failed.length).toBeGreaterThan(0);
    expect(unhandled()).toEqual([]);

    // A window is one statement: when the connection dies after PostgreSQL received it, the
    // statement may have committed though its answer was lost. Such a window is in the ledger,
    // done by the broken run; every other failed window is one the ledger holds no done row for.
    const committed = await t.db
      .selectFrom('sync_windows')
      .select(['resource', 'day'])
      .where('status', '=', 'done')
      .where('run_id', '=', broken.runId)
      .execute();
    const landed = new Set(committed.map((w) => `${w.resource} ${String(w.day).slice(0, 10)}`));

    // The ledger could not record some failures (the database was gone): the plan finds them anyway.
    const next = await runAgainst(viaProxy(), sim, { now: NOW });
    expect(next.status).toBe('ok');
    const retried = new Set(next.windows.map((w) => `${w.resource} ${w.day}`));
    const lost = failed.map((w) => `${w.resource} ${w.day}`).filter((k) => !landed.has(k));
    expect(lost.length).toBeGreaterThan(0);
    for (const key of lost) expect(retried.has(key), key).toBe(true);
    expect(await warehouseItems(t)).toEqual(truthItems(sim.truth()));
    for (const row of await rowCounts()) expect(row.n, row.table).toBe(row.keys);
    const marks = await t.db.selectFrom('watermarks').select('day').execute();
    expect(marks.map((m) => m.day)).toEqual([TO, TO, TO]);
  }, 60_000);

  it('stalled in the middle of a sync: the run waits it out and completes, exactly once', async () => {
    let requests = 0;
    let stalled: Promise<void> | undefined;
    const wrap = (client: ApiClient): ApiClient => ({
      ...client,
      window: async (resource, query, context) => {
        requests += 1;
        if (requests === 10) {
          proxy.stall();
          stalled = new Promise((resolve) => setTimeout(resolve, 1_500)).then(() => proxy.restore());
        }
        return client.window(resource, query, context);
      },
    });
    const result = await runAgainst(viaProxy(), sim, {
      now: NOW,
      sources: [{ name: 'stalled', baseUrl: sim.url, apiKey: sim.apiKey }],
      wrapClient: wrap,
    });
    await stalled;
    expect(result.status).toBe('ok');
    expect(result.durationMs).toBeGreaterThanOrEqual(1_400);
    expect(await warehouseItems(t, 'stalled')).toEqual(truthItems(sim.truth()));
    for (const row of await rowCounts()) expect(row.n, row.table).toBe(row.keys);
    expect(unhandled()).toEqual([]);
  }, 60_000);

  for (const fault of ['reset', 'stall'] as const) {
    it(`${fault} during a webhook burst: 200 or 503 only, every 200 stored; after the senders retry, each delivery stored once`, async () => {
      const app = receiver(pool, { persistTimeoutMs: 600 });
      const base = await listen(app);
      try {
        const first = fault === 'reset' ? 100_000 : 200_000;
        const ids = Array.from({ length: 150 }, (_, i) => first + i);
        const answers = new Map<number, number>();
        let acknowledged = 0;
        const send = async (id: number) => {
          const response = await fetch(`${base}${MAIN_URL}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(feedbackBody({ id })),
          }).catch(() => undefined);
          await response?.arrayBuffer();
          answers.set(id, response?.status ?? 0);
          if (response?.status === 200) acknowledged += 1;
        };
        const queue = [...ids];
        const outage = (async () => {
          while (acknowledged < 30) await new Promise((resolve) => setTimeout(resolve, 2));
          if (fault === 'reset') await proxy.cut();
          else proxy.stall();
          await new Promise((resolve) => setTimeout(resolve, 1_200));
          await proxy.restore();
        })();
        await Promise.all(
          Array.from({ length: 6 }, async () => {
            for (let id = queue.shift(); id !== undefined; id = queue.shift()) await send(id);
          }),
        );
        await outage;

        const statuses = new Set(answers.values());
        expect(
          [...statuses].every((s) => s === 200 || s === 503 || s === 0),
          [...statuses].join(),
        ).toBe(true);
        expect(statuses.has(503)).toBe(true);
        const stored = async () =>
          new Set(
            (
              await t.db
                .selectFrom('feedback')
                .select('id')
                .where('id', '>=', first)
                .where('id', '<', first + ids.length)
                .execute()
            ).map((r) => r.id),
          );
        const before = await stored();
        for (const [id, status] of answers)
          if (status === 200) expect(before.has(id), `acknowledged ${id}`).toBe(true);

        // The service delivers again what was not acknowledged (a stalled one may have committed late).
        for (let round = 0; round < 5 && [...answers.values()].some((s) => s !== 200); round++) {
          for (const [id, status] of answers) if (status !== 200) await send(id);
        }
        expect([...answers.values()].every((s) => s === 200)).toBe(true);
        expect((await stored()).size).toBe(ids.length);
        const events = await sql<{ n: number; bodies: number }>`
          select count(*)::int as n, count(distinct body_hash)::int as bodies from webhook_events
          where (body->>'id')::bigint >= ${first} and (body->>'id')::bigint < ${first + ids.length}`.execute(
          t.db,
        );
        expect(events.rows[0]).toEqual({ n: ids.length, bodies: ids.length });
        expect(unhandled()).toEqual([]);
      } finally {
        await app.close();
      }
    }, 60_000);
  }
});
