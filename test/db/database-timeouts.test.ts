import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { usingWarehouse } from '../../src/cli/warehouse.js';
import { loadConfig } from '../../src/config/config.js';
import {
  CONNECT_TIMEOUT_MS,
  closeAtForcedExit,
  createDb,
  createPool,
  isDatabaseTimeout,
  maskPassword,
  READ_STATEMENT_TIMEOUT_MS,
} from '../../src/db/connection.js';
import { DatabaseUnavailableError } from '../../src/errors.js';
import { createLogger } from '../../src/log/logger.js';
import { cliEnv, runCli } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase, withSecretPassword } from '../helpers/database.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';

/**
 * A database that accepts connections and never answers must not hang a
 * command (a monitoring check runs `status`); a statement beyond its timeout is cut by the server;
 * waiting for a free pooled connection is not limited (a sync's windows queue for connections).
 */

let t: TestDatabase;
let proxy: TcpProxy;
/** The test database through the proxy, with a password in it (the output must never show it). */
let proxiedUrl: string;
/** The password in proxiedUrl. */
let secret: string;

beforeAll(async () => {
  t = await createTestDatabase();
  const target = new URL(t.url);
  proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
  ({ url: proxiedUrl, secret } = withSecretPassword(proxy.urlFor(t.url), 'CANARY-timeout-password'));
});

afterAll(async () => {
  await proxy.close();
  await t.drop();
});

describe('status against a database that does not answer', () => {
  test('a server that accepts and never answers: exit 5 within seconds, one line, no password', async () => {
    proxy.hang();
    try {
      const started = Date.now();
      const result = await runCli(['status'], cliEnv({ DATABASE_URL: proxiedUrl }));
      const seconds = (Date.now() - started) / 1000;
      expect(result.code).toBe(5);
      // It waited for the connect timeout; that it gave up then is the message below, and the
      // test's own timeout bounds the rest: a wall-clock bound would time the CLI's start, which
      // on a loaded machine takes seconds of its own.
      expect(seconds).toBeGreaterThanOrEqual(CONNECT_TIMEOUT_MS / 1000 - 1);
      expect(result.stdout).toBe('');
      expect(result.stderr).toBe(
        `insights-sync: the database at 127.0.0.1:${proxy.port}${new URL(t.url).pathname} did not answer within 10 s; check DATABASE_URL and that the server is running and not overloaded\n`,
      );
      expect(`${result.stdout}${result.stderr}`).not.toContain(secret);
    } finally {
      await proxy.restore();
    }
  }, 40_000);

  test('a server that refuses connections: exit 5 at once, one line, no password', async () => {
    await proxy.cut();
    try {
      const result = await runCli(['status', '--json'], cliEnv({ DATABASE_URL: proxiedUrl }));
      expect(result.code).toBe(5);
      expect(result.stderr).toMatch(
        /^insights-sync: cannot connect to the database at 127\.0\.0\.1:\d+\/\S+ \(ECONNREFUSED: [^\n]*\); check DATABASE_URL and that the server is running\n$/,
      );
      expect(`${result.stdout}${result.stderr}`).not.toContain(secret);
    } finally {
      await proxy.restore();
    }
  }, 30_000);

  test('the same database answering: status exits 0 and says nothing of the password', async () => {
    const result = await runCli(['status'], cliEnv({ DATABASE_URL: proxiedUrl }));
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('nothing loaded yet');
  }, 30_000);
});

describe('usingWarehouse', () => {
  test('a pool a forced exit ended already (a second Ctrl+C) is not ended again: no error over the exit', async () => {
    const config = loadConfig({ requireSources: false, env: { DATABASE_URL: t.url } });
    const logger = createLogger({ level: 'silent', pretty: false });
    const answer = await usingWarehouse(config, logger, async ({ pool, url }) => {
      await closeAtForcedExit(pool, url);
      return 'exited';
    });
    expect(answer).toBe('exited');
  });

  test("a statement beyond the command's statement timeout ends it with DatabaseUnavailableError (exit 5)", async () => {
    const config = loadConfig({ requireSources: false, env: { DATABASE_URL: proxiedUrl } });
    const logger = createLogger({ level: 'silent', pretty: false });
    const started = Date.now();
    const error = await usingWarehouse(
      config,
      logger,
      async ({ db, displayUrl, passwordFile }) => {
        expect(displayUrl).toBe(proxiedUrl.replace(secret, '***'));
        expect(passwordFile).toBeUndefined();
        // The probe and the migrations are done; now the network freezes mid-command.
        proxy.stall();
        await sql`select 1`.execute(db);
      },
      { statementTimeoutMs: 300 },
    ).then(
      () => undefined,
      (e: unknown) => e,
    );
    await proxy.restore();
    expect(error).toBeInstanceOf(DatabaseUnavailableError);
    expect(error).toMatchObject({ exitCode: 5 });
    expect((error as Error).message).toMatch(
      /^the database at 127\.0\.0\.1:\d+\/\S+ did not answer in time \(Query read timeout\)/,
    );
    expect((error as Error).message).not.toContain(secret);
    expect(Date.now() - started).toBeLessThan(15_000);
  }, 30_000);

  test("a statement cut by the server's statement_timeout: DatabaseUnavailableError too", async () => {
    const config = loadConfig({ requireSources: false, env: { DATABASE_URL: t.url } });
    const logger = createLogger({ level: 'silent', pretty: false });
    const error = await usingWarehouse(
      config,
      logger,
      async ({ db }) => {
        await sql`select pg_sleep(5)`.execute(db);
      },
      { statementTimeoutMs: READ_STATEMENT_TIMEOUT_MS / 50 },
    ).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(DatabaseUnavailableError);
    expect((error as Error).message).toContain('canceling statement due to statement timeout');
  });
});

describe('createPool timeouts', () => {
  test('a statement beyond statementTimeoutMs is cancelled by the server', async () => {
    const pool = createPool({ url: t.url, schema: t.schema, statementTimeoutMs: 300 });
    try {
      const started = Date.now();
      const error = await pool.query('select pg_sleep(5)').then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toMatchObject({ code: '57014', message: expect.stringMatching(/statement timeout/) });
      expect(isDatabaseTimeout(error)).toBe(true);
      expect(Date.now() - started).toBeLessThan(3_000);
      // The pool goes on working.
      expect((await pool.query('select 1 as one')).rows).toEqual([{ one: 1 }]);
    } finally {
      await pool.end();
    }
  });

  test('a statement on a stalled connection: the client gives up after the timeout plus a margin', async () => {
    const pool = createPool({ url: proxy.urlFor(t.url), schema: t.schema, statementTimeoutMs: 200, max: 1 });
    try {
      await pool.query('select 1');
      proxy.stall();
      const started = Date.now();
      const error = await pool.query('select 1').then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toMatchObject({ message: 'Query read timeout' });
      expect(isDatabaseTimeout(error)).toBe(true);
      expect(Date.now() - started).toBeLessThan(10_000);
    } finally {
      await proxy.restore();
      await pool.end();
    }
  }, 20_000);

  test('without statementTimeoutMs, a long statement runs to its end', async () => {
    const db = createDb(createPool({ url: t.url, schema: t.schema }));
    try {
      const { rows } = await sql<{ timeout: string }>`
        select current_setting('statement_timeout') as timeout from pg_sleep(1.2)`.execute(db);
      expect(rows).toEqual([{ timeout: '0' }]);
    } finally {
      await db.destroy();
    }
  });

  test('opening a connection gives up after connectTimeoutMs', async () => {
    proxy.hang();
    const pool = createPool({ url: proxy.urlFor(t.url), schema: t.schema, connectTimeoutMs: 300 });
    try {
      const started = Date.now();
      const error = await pool.query('select 1').then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isDatabaseTimeout(error)).toBe(true);
      expect(Date.now() - started).toBeLessThan(2_000);
    } finally {
      await proxy.restore();
      await pool.end();
    }
  });

  test('waiting for a free pooled connection is not limited by the connect timeout', async () => {
    // Room for a real connect: a password-checking server (scram-sha-256, the embedded one) takes
    // hundreds of milliseconds on a loaded machine. The wait below is well past it.
    const pool = createPool({ url: t.url, schema: t.schema, max: 1, connectTimeoutMs: 1_000 });
    try {
      const held = await pool.connect();
      const waiting = pool.query('select 2 as two');
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      held.release();
      expect((await waiting).rows).toEqual([{ two: 2 }]);
    } finally {
      await pool.end();
    }
  });
});

describe('maskPassword', () => {
  test('the password becomes ***, the rest stays', () => {
    expect(maskPassword('postgres://postgres:s3cr%2Ft@127.0.0.1:54329/postgres')).toBe(
      'postgres://postgres:***@127.0.0.1:54329/postgres',
    );
    expect(maskPassword('postgres://u@h:5432/db?sslmode=require')).toBe(
      'postgres://u@h:5432/db?sslmode=require',
    );
    expect(maskPassword('host=h password=x')).toBe('(connection string not shown)');
  });
});
