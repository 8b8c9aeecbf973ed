import { PassThrough } from 'node:stream';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { watchLockWaits } from '../../src/db/lock-watch.js';
import { createLogger } from '../../src/log/logger.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

/** A command whose statement waits on another session's lock says so, naming the holder. */
describe('watchLockWaits', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(() => t.drop());

  it('logs a wait on a lock held by another session, with the holder, and nothing when nothing waits', async () => {
    const lines: string[] = [];
    const destination = new PassThrough();
    destination.on('data', (chunk: Buffer) => lines.push(...chunk.toString().split('\n').filter(Boolean)));
    const logger = createLogger({ level: 'warn', pretty: false, destination });
    const watch = watchLockWaits(t.pool, t.url, logger, { everyMs: 50, afterMs: 200 });
    const holder = new pg.Client({ connectionString: t.url, application_name: 'the holder' });
    await holder.connect();
    try {
      // A statement that runs without waiting: no line.
      await t.pool.query('select pg_sleep(0.4)');
      expect(lines).toEqual([]);
      await holder.query('begin');
      await holder.query(`lock table ${t.schema}.feedback in access exclusive mode`);
      const waiting = t.pool.query('select count(*) from feedback');
      await vi.waitFor(() => expect(lines.length).toBeGreaterThan(0), { timeout: 10_000, interval: 50 });
      await holder.query('rollback');
      await waiting;
      const line = JSON.parse(lines[0] ?? '{}') as { msg: string; holders: { application: string }[] };
      expect(line.msg).toBe('a statement of this command waits on a lock held by another session');
      expect(line.holders.map((h) => h.application)).toEqual(['the holder']);
    } finally {
      await holder.end();
      await watch.stop();
    }
  });
});
