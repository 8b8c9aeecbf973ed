import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiClient } from '../../src/api/api-client.js';
import type { SourceConfig } from '../../src/config/source-config.js';
import { bookkeepingSchema } from '../../src/db/bookkeeping.js';
import { createDb, createPool } from '../../src/db/connection.js';
import { silentLogger } from '../../src/log/logger.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { createWebhookServer } from '../../src/webhooks/server.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { type RunOptions, runAgainst } from '../helpers/sync-harness.js';
import { listen } from '../webhooks/webhook-helpers.js';
import { orderedDump } from './warehouse-text.js';

/**
 * Guarantee 6: re-running any window three times leaves a byte-identical dump of the tables a
 * window writes (ordered by primary key) and zero updated rows. The windows hold what makes a
 * re-run risky: invalid items (rejects), unknown fields, two copies of a key with different
 * content, rows a webhook delivered first (origin 'both'), and hashed personal data.
 *
 * The ledger (sync_windows) is left out: it records each run (attempts, fetched_at, run_id) by
 * design. Snapshot tables are not windows (they record last_seen_at on every run).
 */

const FROM = '2026-03-01';
const TO = '2026-03-09';
const NOW = new Date('2026-03-10T05:00:00.000Z');
const WINDOW_TABLES = ['feedback', 'survey_answers', 'recordings', 'visitors', 'rejects', 'webhook_events'];
const TOKEN = 'rerun-token-0123456789abcdef';

/** A second copy of each response's first item, with other content: a key conflict in every window. */
function withConflictingCopies(client: ApiClient): ApiClient {
  return {
    ...client,
    window: async (resource, query, context) => {
      const items = await client.window(resource, query, context);
      const first = items[0];
      if (first === null || typeof first !== 'object') return items;
      return [...items, { ...first, x_copy: 'a copy with other content' }];
    },
  };
}

/** Every row's physical version: an UPDATE, even to the same values, changes xmin or ctid. */
async function rowVersions(t: TestDatabase): Promise<string> {
  const parts: string[] = [];
  for (const table of WINDOW_TABLES) {
    const rows = await sql<{ v: string }>`
      select xmin::text || ':' || ctid::text as v from ${sql.table(table)} order by 1`.execute(t.db);
    parts.push(`${table}: ${rows.rows.map((r) => r.v).join(' ')}`);
  }
  return parts.join('\n');
}

async function updatedTuples(t: TestDatabase, tables: readonly string[]): Promise<number> {
  const rows = await sql<{ n: number }>`
    select coalesce(sum(n_tup_upd), 0)::int as n from pg_stat_user_tables
    where schemaname in (${t.schema}, ${bookkeepingSchema(t.schema)}) and relname in (${sql.join(tables.map((x) => sql.lit(x)))})`.execute(
    t.db,
  );
  return rows.rows[0]?.n ?? -1;
}

describe('re-running a window', () => {
  let t: TestDatabase;
  let sim: Simulator;
  let sources: SourceConfig[];

  /** One run on a pool of its own, ended after: its backends exit, which flushes their statistics. */
  async function runOnOwnPool(options: Omit<RunOptions, 'sources' | 'wrapClient'>) {
    const pool = createPool({ url: t.url, schema: t.schema });
    try {
      return await runAgainst({ ...t, pool, db: createDb(pool) }, sim, {
        ...options,
        sources,
        settings: { maxInvalidShare: 1, ...options.settings },
        wrapClient: withConflictingCopies,
      });
    } finally {
      await pool.end();
    }
  }

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({
      seed: 23,
      from: FROM,
      to: TO,
      cap: 4000,
      malformedRate: 0.08,
      extraFields: true,
    });
    sources = [
      { name: 'kept', baseUrl: sim.url, apiKey: sim.apiKey, webhookToken: TOKEN },
      {
        name: 'hashed',
        baseUrl: sim.url,
        apiKey: sim.apiKey,
        webhookToken: TOKEN,
        pii: { mode: 'hash', key: 'b1e7c0d94a2f68359e0d7a4c1b83f625d9e04a7c3f1b86e250d9c4a7e3f18b62' },
      },
    ];
    // Webhooks first: these rows are 'webhook', then the sync makes them 'both'.
    const receiver = createWebhookServer({
      pool: t.pool,
      logger: silentLogger(),
      sources,
      bodyLimit: 64 * 1024,
    });
    const base = await listen(receiver);
    for (const source of sources)
      await sim.sendWebhooks(`${base}/webhooks/${source.name}/${TOKEN}`, { limit: 25 });
    await receiver.close();
    const first = await runOnOwnPool({ now: NOW });
    expect(first.status).toBe('ok');
    expect(first.summary.kept?.feedback?.conflicts).toBeGreaterThan(0);
    expect(first.summary.kept?.feedback?.rejected).toBeGreaterThan(0);
    const both = await sql<{
      n: number;
    }>`select count(*)::int as n from feedback where origin = 'both'`.execute(t.db);
    expect(both.rows[0]?.n).toBeGreaterThan(0);
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
  });

  const reruns: { name: string; options: Omit<RunOptions, 'sources' | 'wrapClient'> }[] = [
    {
      name: 'a backfill of every window',
      options: { now: NOW, request: { trigger: 'backfill', range: { from: FROM, to: TO } } },
    },
    {
      name: 'a single window (one day, one resource)',
      options: {
        now: NOW,
        request: {
          trigger: 'backfill',
          range: { from: '2026-03-04', to: '2026-03-04' },
          resources: ['survey'],
        },
      },
    },
    { name: 'a nightly sync (its lookback days)', options: { now: NOW, settings: { lookbackDays: 5 } } },
  ];

  for (const { name, options } of reruns) {
    it(`${name}, three times: byte-identical ordered dump, no row rewritten, 0 updated tuples`, async () => {
      const dump = await orderedDump(t, WINDOW_TABLES);
      const versions = await rowVersions(t);
      const updatesBefore = await updatedTuples(t, WINDOW_TABLES);
      const ledgerBefore = await updatedTuples(t, ['sync_windows']);
      let windows = 0;
      for (let i = 0; i < 3; i++) {
        const result = await runOnOwnPool(options);
        expect(result.status).toBe('ok');
        expect(result.windows.length).toBeGreaterThan(0);
        expect(result.windows.every((w) => w.inserted === 0 && w.updated === 0)).toBe(true);
        windows += result.windows.filter((w) => w.status === 'done').length;
        expect(await orderedDump(t, WINDOW_TABLES)).toBe(dump);
        expect(await rowVersions(t)).toBe(versions);
      }
      // The ledger rows the re-runs rewrote show in the statistics once they are in.
      await expect
        .poll(() => updatedTuples(t, ['sync_windows']), { timeout: 15_000 })
        .toBeGreaterThanOrEqual(ledgerBefore + windows);
      expect(await updatedTuples(t, WINDOW_TABLES)).toBe(updatesBefore);
    }, 60_000);
  }
});
