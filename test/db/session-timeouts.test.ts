import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, sessionTimeouts, sessionTimeoutsDiffer } from '../../src/db/connection.js';
import { CliError } from '../../src/errors.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

/**
 * Each connection sets the timeouts the tool relies on itself (statement_timeout, lock_timeout,
 * idle_in_transaction_session_timeout), over the server's and the role's defaults, and reads them
 * back before it is used: a session running with others is never used silently.
 */
describe('the session timeouts, decided', () => {
  const expected = sessionTimeouts({ url: '', schema: 'insights', lockTimeoutMs: 10_000 });

  it('are none (0) unless a command sets them', () => {
    expect(expected).toEqual({
      statement_timeout: 0,
      lock_timeout: 10_000,
      idle_in_transaction_session_timeout: 0,
    });
  });

  it('differ when one value is another, or the server does not say it', () => {
    expect(sessionTimeoutsDiffer(expected, { ...expected })).toBeUndefined();
    expect(sessionTimeoutsDiffer(expected, { ...expected, lock_timeout: 0 })).toBe(
      'lock_timeout = 0 ms, set 10000 ms',
    );
    expect(
      sessionTimeoutsDiffer(expected, { statement_timeout: 0, idle_in_transaction_session_timeout: 5 }),
    ).toBe('lock_timeout = unknown, set 10000 ms; idle_in_transaction_session_timeout = 5 ms, set 0 ms');
  });
});

describe('the session timeouts, on a real server', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(() => t.drop());

  it('a connection runs with what it set, whatever the role and database defaults say', async () => {
    const { rows } = await t.pool.query<{ current_user: string }>('select current_user');
    const role = rows[0]?.current_user ?? '';
    const database = new URL(t.url).pathname.slice(1);
    await t.pool.query(`alter role ${role} in database ${database} set lock_timeout = '1ms'`);
    await t.pool.query(`alter database ${database} set statement_timeout = '1ms'`);
    try {
      const pool = createPool({
        url: t.url,
        schema: t.schema,
        lockTimeoutMs: 10_000,
        idleInTransactionTimeoutMs: 15_000,
      });
      try {
        const settings = await pool.query<{ lock: string; statement: string; idle: string }>(
          `select current_setting('lock_timeout') as lock, current_setting('statement_timeout') as statement,
                  current_setting('idle_in_transaction_session_timeout') as idle`,
        );
        expect(settings.rows[0]).toEqual({ lock: '10s', statement: '0', idle: '15s' });
      } finally {
        await pool.end();
      }
    } finally {
      await t.pool.query(`alter role ${role} in database ${database} reset lock_timeout`);
      await t.pool.query(`alter database ${database} reset statement_timeout`);
    }
  });

  it('a session that does not keep them (options in DATABASE_URL replace ours) is closed before use, with one line naming the setting', async () => {
    const url = new URL(t.url);
    url.searchParams.set('options', '-c lock_timeout=0');
    const pool = createPool({ url: url.toString(), schema: t.schema, lockTimeoutMs: 10_000 });
    try {
      const failure = await pool.query('select 1').then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(failure).toBeInstanceOf(CliError);
      expect((failure as Error).message).toBe(
        'the database session does not keep the timeouts insights-sync sets (lock_timeout = 0 ms, set 10000 ms): remove options from DATABASE_URL, or connect without a pooler or proxy that drops startup options',
      );
      expect(pool.totalCount).toBe(0);
    } finally {
      await pool.end();
    }
  });
});

/**
 * A proxy to the test server that drops a connection at the first query its client sends (a
 * simple 'Q' or an extended 'P'): the moment a new connection reads its timeouts back.
 */
async function proxyDroppingFirstQuery(url: string): Promise<{ url: string; close: () => Promise<void> }> {
  const target = new URL(url);
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    let startup = true;
    client.on('data', (chunk: Buffer) => {
      if (!startup && (chunk[0] === 0x51 || chunk[0] === 0x50)) {
        client.destroy();
        upstream.destroy();
        return;
      }
      startup = false;
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => client.write(chunk));
    for (const socket of [client, upstream]) socket.on('error', () => {});
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const proxied = new URL(url);
  proxied.hostname = '127.0.0.1';
  proxied.port = String((server.address() as net.AddressInfo).port);
  return {
    url: proxied.toString(),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe('a connection lost while it reads its timeouts back', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(() => t.drop());

  it('fails the query that wanted it, and throws nothing at the process', async () => {
    const uncaught: Error[] = [];
    const onUncaught = (error: Error) => uncaught.push(error);
    process.on('uncaughtException', onUncaught);
    const proxy = await proxyDroppingFirstQuery(t.url);
    const pool = createPool({ url: proxy.url, schema: t.schema });
    try {
      await expect(pool.query('select 1')).rejects.toThrow(/Connection terminated/);
      // pg reports a lost connection on the client too, an event later.
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(uncaught).toEqual([]);
    } finally {
      process.off('uncaughtException', onUncaught);
      await pool.end();
      await proxy.close();
    }
  });
});
