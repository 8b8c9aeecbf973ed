import { hostname } from 'node:os';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, createPool } from '../../src/db/connection.js';
import type { LockHolder } from '../../src/db/lock-holder.js';
import { migrateToLatest } from '../../src/db/migrator.js';
import { acquireRunLock, runLockHolder } from '../../src/db/run-lock.js';
import { LockError } from '../../src/errors.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

describe('the warehouse lock', () => {
  let t: TestDatabase;

  beforeAll(async () => {
    t = await createTestDatabase();
    // A second warehouse in the same database.
    const other = createDb(createPool({ url: t.url, schema: 'insights_other' }));
    expect((await migrateToLatest(other, 'insights_other')).error).toBeUndefined();
    await other.destroy();
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
          `^another insights-sync run holds the lock on schema insights \\(pid ${process.pid} on host ${hostname()}, database user postgres, since \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z\\); rerun with --wait to queue$`,
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
    try {
      // Told once, when it starts waiting: the wait begins after its own login, which a loaded
      // machine can make slow, so the test waits for the signal rather than a fixed time.
      const waits: (LockHolder | undefined)[] = [];
      let started: () => void = () => {};
      const waiting = new Promise<void>((resolve) => {
        started = resolve;
      });
      const second = acquireRunLock({
        url: t.url,
        schema: 'insights',
        wait: true,
        pollMs: 20,
        onWait: (holder) => {
          waits.push(holder);
          started();
        },
      });
      let acquired = false;
      void second.then(() => {
        acquired = true;
      });
      await waiting;
      // Several polls later it still waits, and was told only once.
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(acquired).toBe(false);
      expect(waits).toHaveLength(1);
      expect(waits[0]).toMatchObject({ pid: process.pid, host: hostname(), user: 'postgres' });
      await first.release();
      const lock = await second;
      expect(acquired).toBe(true);
      await lock.release();
    } finally {
      await first.release();
    }
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

  it('status names the holder with its database user while a run holds the lock, and no one after', async () => {
    expect(await runLockHolder(t.db)).toBeNull();
    const lock = await acquireRunLock({ url: t.url, schema: 'insights' });
    try {
      expect(await runLockHolder(t.db)).toMatchObject({
        pid: process.pid,
        host: hostname(),
        user: 'postgres',
      });
    } finally {
      await lock.release();
    }
    expect(await runLockHolder(t.db)).toBeNull();
  });

  it('holds back no vacuum: its session has no xid and no snapshot, whatever the server defaults say', async () => {
    // Defaults an operator may set: each would either kill the lock's session or keep a snapshot.
    const database = (await sql<{ name: string }>`select current_database() as name`.execute(t.db)).rows[0]
      ?.name;
    await sql`alter database ${sql.id(database ?? '')} set idle_in_transaction_session_timeout = '200ms'`.execute(
      t.db,
    );
    await sql`alter database ${sql.id(database ?? '')} set default_transaction_isolation = 'serializable'`.execute(
      t.db,
    );
    try {
      const lock = await acquireRunLock({ url: t.url, schema: 'insights' });
      try {
        // The run writes meanwhile, as a run does: xids go on being assigned elsewhere.
        await sql`insert into sources (source_id, base_url) values ('vacuum-probe', 'http://x')`.execute(
          t.db,
        );
        await new Promise((resolve) => setTimeout(resolve, 600));
        const session = await sql<{ xid: string | null; xmin: string | null; state: string }>`
          select backend_xid::text as xid, backend_xmin::text as xmin, state
            from pg_stat_activity
           where pid = (select l.pid from pg_locks l
                         where l.relation = 'run_lock'::regclass and l.mode = 'ShareUpdateExclusiveLock' and l.granted
                           and l.database = (select oid from pg_database where datname = current_database()))`.execute(
          t.db,
        );
        expect(session.rows).toHaveLength(1);
        expect(session.rows[0]).toMatchObject({ xid: null, xmin: null, state: 'idle in transaction' });
        // Past the database's 200 ms idle-in-transaction timeout, the lock is still held.
        expect(lock.lost.aborted).toBe(false);
        await expect(acquireRunLock({ url: t.url, schema: 'insights' })).rejects.toBeInstanceOf(LockError);
      } finally {
        await lock.release();
      }
    } finally {
      await sql`alter database ${sql.id(database ?? '')} reset idle_in_transaction_session_timeout`.execute(
        t.db,
      );
      await sql`alter database ${sql.id(database ?? '')} reset default_transaction_isolation`.execute(t.db);
      await sql`delete from sources where source_id = 'vacuum-probe'`.execute(t.db);
    }
  });
});
