import { sql } from 'kysely';
import { getConstructionPlans } from 'pg-boss';
import PgBoss10 from 'pg-boss-10';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { down as backTo0020 } from '../../migrations/0036-window-queue-jsonb.js';
import { migrations } from '../../migrations/index.js';
import { bookkeepingSchema, queueSchema } from '../../src/db/bookkeeping.js';
import { PG_BOSS_10_VERSION, queueVersion } from '../../src/db/queue-schema.js';
import { silentLogger } from '../../src/log/logger.js';
import { openQueue, type WindowJob, windowPriority, windowQueueName } from '../../src/queue/window-queue.js';
import { cliEnv, runCli } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

/**
 * A warehouse whose window queue pg-boss 10 made (the releases before pg-boss 12), with jobs
 * waiting, is upgraded in place by `migrate`: pg-boss 12 has no migration from pg-boss 10's
 * schema, so src/db/queue-schema.ts carries the waiting jobs over itself. pg-boss 10 itself
 * (the devDependency pg-boss-10) makes the old schema and its jobs here.
 */

const settings = {
  sourceConcurrency: 2,
  queueExpireSeconds: 60,
  queueMaintenanceSeconds: 60,
  queueRetryLimit: 3,
};
const job = (runId: number, day: string, source = 'main'): WindowJob => ({
  runId,
  source,
  resource: 'feedback',
  day,
  startDay: '2026-01-01',
  today: '2026-02-01',
  schema: '0033-visitor-index-order',
});
const V12_VERSION = Number(/\.version\(version\) VALUES \('(\d+)'\)/.exec(getConstructionPlans('x'))?.[1]);

describe('a queue of pg-boss 10 with jobs waiting, after migrate', () => {
  let t: TestDatabase;
  let name: string;
  const waiting: Record<string, { source: string; data: WindowJob; priority: number }> = {};
  let doneId: string;
  let activeId: string;

  beforeAll(async () => {
    t = await createTestDatabase();
    name = queueSchema(t.schema);
    // The warehouse as the release on pg-boss 10 left it: migrations up to 0033, queue by pg-boss 10.
    // Every migration from 0036 on is undone, newest first, as the release before it never ran them.
    const later = Object.keys(migrations)
      .filter((migration) => migration > '0036')
      .sort()
      .reverse();
    for (const migration of later) await migrations[migration]?.down?.(t.db);
    await backTo0020(t.db);
    await sql`delete from ${sql.id(bookkeepingSchema(t.schema), 'kysely_migration')} where name >= '0036'`.execute(
      t.db,
    );
    await sql.raw(`drop schema "${name}" cascade; create schema "${name}"`).execute(t.db);
    await sql.raw(PgBoss10.getConstructionPlans(name)).execute(t.db);
    const old = new PgBoss10({
      connectionString: t.url,
      schema: name,
      migrate: false,
      supervise: false,
      schedule: false,
    });
    await old.start();
    try {
      for (const source of ['main', 'other', 'old'])
        await old
          .getDb()
          .executeSql(`select "${bookkeepingSchema(t.schema)}".create_window_queue($1, $2)`, [
            windowQueueName(source),
            { policy: 'standard', retryLimit: 3, retryDelay: 0, expireInSeconds: 60 },
          ]);
      const sent: { source: string; data: WindowJob; priority: number }[] = [
        { source: 'main', data: job(1, '2026-01-01'), priority: windowPriority('backfill', '2026-01-01') },
        { source: 'main', data: job(1, '2026-01-02'), priority: windowPriority('backfill', '2026-01-02') },
        { source: 'main', data: job(2, '2026-01-30'), priority: windowPriority('sync', '2026-01-30') },
        {
          source: 'other',
          data: job(2, '2026-01-30', 'other'),
          priority: windowPriority('sync', '2026-01-30'),
        },
        {
          source: 'other',
          data: job(2, '2026-01-31', 'other'),
          priority: windowPriority('sync', '2026-01-31'),
        },
      ];
      for (const { source, data, priority } of sent) {
        const id = await old.send(windowQueueName(source), data, {
          priority,
          retryLimit: 3,
          expireInSeconds: 60,
        });
        if (id === null) throw new Error('pg-boss 10 sent no job');
        waiting[id] = { source, data, priority };
      }
      // One job ended (pg-boss's history) and one taken by a worker of the old release.
      doneId = (await old.send(windowQueueName('old'), job(0, '2025-12-31', 'old'))) ?? '';
      const [done] = await old.fetch(windowQueueName('old'));
      await old.complete(windowQueueName('old'), done?.id ?? '');
      expect(done?.id).toBe(doneId);
      const [taken] = await old.fetch<WindowJob>(windowQueueName('main'));
      activeId = taken?.id ?? '';
      expect(taken?.data.day).toBe('2026-01-30');
    } finally {
      await old.stop({ graceful: false, wait: true });
    }
    expect(await queueVersion(t.db, t.schema)).toBe(PG_BOSS_10_VERSION);
  }, 60_000);
  afterAll(async () => {
    await t.drop();
  });

  it('migrate upgrades the queue to pg-boss 12 in place and applies the new migration', async () => {
    const env = cliEnv({ DATABASE_URL: t.url, INSIGHTS_SCHEMA: t.schema });
    const result = await runCli(['migrate'], env);
    expect(result.code, result.stderr).toBe(0);
    expect(await queueVersion(t.db, t.schema)).toBe(V12_VERSION);
    const applied = await sql<{ name: string }>`
      select name from ${sql.id(bookkeepingSchema(t.schema), 'kysely_migration')} where name = '0036-window-queue-jsonb'`.execute(
      t.db,
    );
    expect(applied.rows).toHaveLength(1);
    // Once is enough: a second migrate finds nothing to do.
    const again = await runCli(['migrate'], env);
    expect(again.code, again.stderr).toBe(0);
    expect(await queueVersion(t.db, t.schema)).toBe(V12_VERSION);
  }, 60_000);

  it('every job that waited still waits, with its data and priority; the taken one waits again; the ended one is gone', async () => {
    const { rows } = await sql<{
      id: string;
      name: string;
      data: WindowJob;
      priority: number;
      state: string;
    }>`
      select id::text, name, data, priority, state::text from ${sql.id(name, 'job')} order by id`.execute(
      t.db,
    );
    expect(rows.map((r) => r.id).sort()).toEqual(Object.keys(waiting).sort());
    expect(rows.map((r) => r.id)).not.toContain(doneId);
    for (const row of rows) {
      const before = waiting[row.id];
      expect(row.name).toBe(windowQueueName(before?.source ?? ''));
      expect(row.data).toEqual(before?.data);
      expect(row.priority).toBe(before?.priority);
      expect(row.state).toBe(row.id === activeId ? 'retry' : 'created');
    }
  });

  it('pg-boss 12 hands them to a worker in priority order, and completes them', async () => {
    const boss = await openQueue(t.url, t.schema, settings, silentLogger());
    try {
      const taken: string[] = [];
      for (const source of ['main', 'other']) {
        for (;;) {
          const [next] = await boss.fetch<WindowJob>(windowQueueName(source));
          if (next === undefined) break;
          taken.push(`${source} ${next.data.runId} ${next.data.day}`);
          await boss.complete(windowQueueName(source), next.id, { done: true });
        }
      }
      expect(taken).toEqual([
        'main 2 2026-01-30',
        'main 1 2026-01-02',
        'main 1 2026-01-01',
        'other 2 2026-01-30',
        'other 2 2026-01-31',
      ]);
      const { rows } = await sql<{ state: string; n: number }>`
        select state::text, count(*)::int as n from ${sql.id(name, 'job')} group by state`.execute(t.db);
      expect(rows).toEqual([{ state: 'completed', n: 5 }]);
    } finally {
      await boss.stop({ graceful: false, timeout: 1000 });
    }
  });
});
