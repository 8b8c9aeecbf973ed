import { describe, expect, it } from 'vitest';
import { sourcesWithWaitingJobs } from '../../src/queue/job-table.js';
import { NAMED_TEXTS_MAX, queueDb } from '../../src/queue/queue-db.js';
import { sendWindowJobs, type WindowJob, windowQueueName } from '../../src/queue/window-queue.js';
import { createTestDatabase } from '../helpers/database.js';
import { openMainQueue, TEST_QUEUE_SETTINGS } from '../helpers/queue-harness.js';

/**
 * pg-boss's statements of a worker's window (fetch, complete, the queues with jobs waiting) go as
 * named statements: each connection parses and plans them once, not once per window.
 */
describe("pg-boss's statements", () => {
  it("a window's fetch and complete, and the read of waiting queues, are prepared once per connection", async () => {
    const t = await createTestDatabase();
    const settings = { ...TEST_QUEUE_SETTINGS, queueRetryLimit: 1 };
    const boss = await openMainQueue(t, { settings });
    try {
      const job = (day: string): WindowJob => ({
        runId: 1,
        source: 'main',
        resource: 'feedback',
        day,
        startDay: '2026-01-01',
        today: '2026-02-01',
      });
      await sendWindowJobs(boss, 'backfill', ['2026-01-01', '2026-01-02', '2026-01-03'].map(job), settings);
      // One after another, as a lane does: the pool lends the same connection each time.
      for (let i = 0; i < 3; i++) {
        expect(await sourcesWithWaitingJobs(boss, t.schema, ['main'])).toEqual(['main']);
        const [next] = await boss.fetch<WindowJob>(windowQueueName('main'));
        if (next === undefined) throw new Error('no job');
        await boss.complete(windowQueueName('main'), next.id, { done: true });
      }
      const { rows } = await boss
        .getDb()
        .executeSql('select statement from pg_prepared_statements where name like $1', ['pgboss\\_%']);
      const prepared = (rows as { statement: string }[]).map((r) => r.statement);
      // Each text once on the connection, however many windows it served.
      expect(prepared.filter((s) => /WITH\s+next AS/.test(s))).toHaveLength(1);
      expect(prepared.filter((s) => /WITH\s+results AS/.test(s))).toHaveLength(1);
      expect(prepared.filter((s) => /max\(priority\) as top/.test(s))).toHaveLength(1);
      expect(new Set(prepared).size).toBe(prepared.length);
    } finally {
      await boss.stop({ graceful: false, timeout: 1000 });
      await t.drop();
    }
  });

  it('names only texts of one statement, and at most NAMED_TEXTS_MAX of them', async () => {
    const t = await createTestDatabase();
    const db = queueDb({ url: t.url, max: 1, applicationName: 'test' }, () => {});
    try {
      // Several statements in one text: only the simple protocol runs them.
      await db.executeSql('select 1; select 2');
      await db.executeSql("select ';' as text");
      for (let i = 0; i < NAMED_TEXTS_MAX + 5; i++) await db.executeSql(`select $1::int + ${i} as n`, [1]);
      expect(db.namedTexts().size).toBe(NAMED_TEXTS_MAX);
      const { rows } = await db.executeSql('select count(*)::int as n from pg_prepared_statements');
      expect(rows[0]).toEqual({ n: NAMED_TEXTS_MAX });
    } finally {
      await db.close();
      await db.close();
      await t.drop();
    }
  });
});
