import { PassThrough } from 'node:stream';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiClient } from '../../src/api/api-client.js';
import { emptyReading } from '../../src/extract/server-reading.js';
import { createLogger } from '../../src/log/logger.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { knowledgeOfEach, type SourceHandle, type SyncContext } from '../../src/sync/context.js';
import { startRun } from '../../src/sync/run-log.js';
import { runWindow } from '../../src/sync/run-window.js';
import { windowMemory } from '../../src/sync/window-memory.js';
import type { DayString } from '../../src/time/days.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

/**
 * Two writers of one run (as a queued run's two workers, each with its own knowledge of the
 * server): the first reads the next day, whose answer holds the day's last hours (the server's
 * day is UTC+5:30), and stores those items as neighbours; one of them then goes from the server;
 * the second reads the day, whose answer lacks it. Nothing in the second writer's own answers
 * shows the day short: the warehouse does (store_window, migration 0053). The day is flagged and
 * reopened, the item kept, the writer learns the reading again and says so.
 */
const DAY = '2026-03-06' as DayString;
const NEXT = '2026-03-07' as DayString;

describe("a day's whole answer lacking an item another writer of the run stored of it", () => {
  let t: TestDatabase;
  let sim: Simulator;
  const lines: { msg: string; lacking?: number }[] = [];
  let ctx: SyncContext;

  const writer = (): SourceHandle => {
    const client = createApiClient({
      source: { name: 'shop', baseUrl: sim.url, apiKey: sim.apiKey },
      retry: { maxAttempts: 1 },
    });
    return {
      name: 'shop',
      baseUrl: client.baseUrl,
      client,
      knowledge: knowledgeOfEach(() => ({ reading: emptyReading() })),
    };
  };
  const plan = { today: '2026-03-20' as DayString, startDay: '2026-03-01' as DayString };

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 11, from: '2026-03-01', to: '2026-03-20', dayOffsetMinutes: 330 });
    const destination = new PassThrough();
    destination.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line));
    });
    ctx = {
      pool: t.pool,
      db: t.db,
      logger: createLogger({ level: 'warn', pretty: false, destination }),
      now: () => new Date(),
      limits: { limit: 1000, maxLimit: 1000 },
      maxInvalidShare: 0.5,
      runId: await startRun(t.db, 'backfill', { from: DAY, to: NEXT }),
      memory: windowMemory(64 * 1024 * 1024),
    };
  });
  afterAll(async () => {
    await sim?.stop();
    await t?.drop();
  });

  it('is flagged and reopened, the item kept, the reading learned again', async () => {
    const first = await runWindow(ctx, writer(), 'feedback', NEXT, plan);
    expect(first).toMatchObject({ status: 'done', truncated: false });
    // The items of the day the next day's answer held, stored as its neighbours.
    const stored = await sql<{ id: string }>`select id::text as id from feedback
      where dt >= ${`${DAY}T00:00:00Z`} and dt < ${`${NEXT}T00:00:00Z`} order by dt desc`.execute(t.db);
    expect(stored.rows.length).toBeGreaterThan(0);
    const gone = stored.rows[0]?.id as string;
    const ofDay = sim.truth().feedback.filter((item) => item.dt.startsWith(DAY));
    const index = ofDay.findIndex((item) => String(item.id) === gone);
    expect(sim.removeItem('feedback', DAY, index)).toContain(gone);

    const second = writer();
    const outcome = await runWindow(ctx, second, 'feedback', DAY, plan);
    expect(outcome).toMatchObject({ status: 'done', truncated: true, fetched: ofDay.length - 1 });
    const ledger = await sql<{ truncated: boolean; item_count: number; reopened: boolean }>`
      select truncated, item_count, reopened_at is not null as reopened from sync_windows
       where resource = 'feedback' and day = ${DAY}`.execute(t.db);
    expect(ledger.rows).toEqual([{ truncated: true, item_count: ofDay.length, reopened: true }]);
    const absent = await sql<{
      n: number;
    }>`select count(*)::int as n from feedback where absent_since is not null`.execute(t.db);
    expect(absent.rows[0]?.n).toBe(0);
    expect(second.knowledge.feedback.relearned).toBe(1);
    expect(lines).toContainEqual(
      expect.objectContaining({
        msg: expect.stringContaining("the day's answer lacks items the run stored of it"),
        lacking: 1,
      }),
    );
  });
});
