import { hostname } from 'node:os';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acquireRunLock, type LockHolder } from '../../src/db/run-lock.js';
import { LockError } from '../../src/errors.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

describe('the warehouse lock', () => {
  let t: TestDatabase;

  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(() => t.drop());

  it('lets one holder in per schema and names it to the next, who fails at once', async () => {
    const first = await acquireRunLock({ url: t.url, schema: 'insights' });
    try {
      const started = Date.now();
      const second = acquireRunLock({ url: t.url, schema: 'insights' });
      await expect(second).rejects.toBeInstanceOf(LockError);
      await expect(second).rejects.toThrow(
        new RegExp(
          `^another insights-sync run holds the lock on schema insights \\(pid ${process.pid} on host ${hostname()} since \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z\\); rerun with --wait to queue$`,
        ),
      );
      expect(Date.now() - started).toBeLessThan(2000);
      expect(new LockError('x').exitCode).toBe(4);
      // Another schema is another warehouse.
      const other = await acquireRunLock({ url: t.url, schema: 'insights_other' });
      await other.release();
    } finally {
      await first.release();
    }
  });

  it('with wait, queues until the holder releases', async () => {
    const first = await acquireRunLock({ url: t.url, schema: 'insights' });
    const waits: (LockHolder | undefined)[] = [];
    const second = acquireRunLock({
      url: t.url,
      schema: 'insights',
      wait: true,
      pollMs: 20,
      onWait: (holder) => waits.push(holder),
    });
    let acquired = false;
    void second.then(() => {
      acquired = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(acquired).toBe(false);
    expect(waits).toHaveLength(1);
    expect(waits[0]).toMatchObject({ pid: process.pid, host: hostname() });
    await first.release();
    const lock = await second;
    await lock.release();
  });

  it('a wait ends when the shutdown signal fires', async () => {
    const first = await acquireRunLock({ url: t.url, schema: 'insights' });
    try {
      const controller = new AbortController();
      const waiting = acquireRunLock({
        url: t.url,
        schema: 'insights',
        wait: true,
        pollMs: 5000,
        signal: controller.signal,
      });
      setTimeout(() => controller.abort(), 50);
      await expect(waiting).rejects.toThrow('stopped while waiting for the lock on schema insights');
    } finally {
      await first.release();
    }
  });

  it('dies with its session: a terminated connection frees the lock and tells the holder', async () => {
    const first = await acquireRunLock({ url: t.url, schema: 'insights' });
    await sql`select pg_terminate_backend(pid) from pg_stat_activity
               where application_name = ${`insights-sync pid=${process.pid} host=${hostname()}`.slice(0, 63)}
                 and datname = current_database()`.execute(t.db);
    await expect.poll(() => first.lost.aborted).toBe(true);
    expect(String(first.lost.reason)).toContain('lost the lock on schema insights');
    const next = await acquireRunLock({ url: t.url, schema: 'insights' });
    await next.release();
    await first.release();
  });
});
