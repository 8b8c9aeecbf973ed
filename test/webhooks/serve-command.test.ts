import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withClient } from '../../scripts/dev-database/admin.js';
import { searchPath } from '../../src/db/bookkeeping.js';
import { cliEnv, listeningUrl, runCli, startCli } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { count, feedbackBody, TOKEN } from './webhook-helpers.js';

/** Resolves with the receiver's base URL once `serve` prints it. */
function refusesConnections(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.on('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.on('error', () => resolve(true));
  });
}

const post = (url: string, body: unknown) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('insights-sync serve', () => {
  let t: TestDatabase;
  let env: Record<string, string>;

  beforeAll(async () => {
    t = await createTestDatabase();
    env = cliEnv({
      DATABASE_URL: t.url,
      INSIGHTS_API_URL: 'http://api.example.test',
      INSIGHTS_API_KEY: 'key',
      INSIGHTS_SOURCE_NAME: 'main',
      INSIGHTS_WEBHOOK_TOKEN: TOKEN,
      INSIGHTS_WEBHOOK_PORT: '0',
      INSIGHTS_WEBHOOK_HOST: '127.0.0.1',
      // Every line fastify or the receiver writes, to search for the token.
      LOG_LEVEL: 'trace',
    });
  });
  afterAll(async () => {
    await t.drop();
  });

  it('has --help, and refuses to start without a token or with a weak one', async () => {
    const help = await runCli(['serve', '--help'], env);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: insights-sync serve/);
    expect(help.stdout).toContain('INSIGHTS_WEBHOOK_TOKEN');

    const { INSIGHTS_WEBHOOK_TOKEN: _unset, ...withoutToken } = env;
    const none = await runCli(['serve'], withoutToken);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('no source has a webhook token: set INSIGHTS_WEBHOOK_TOKEN');

    const weak = await runCli(['serve'], { ...env, INSIGHTS_WEBHOOK_TOKEN: 'CANARY-weak' });
    expect(weak.code).toBe(2);
    expect(weak.stderr).toContain('INSIGHTS_WEBHOOK_TOKEN: a webhook token of 24-256 URL-safe characters');
    expect(weak.stderr).not.toContain('CANARY-weak');
  });

  it('receives deliveries; on SIGTERM lets the one in flight commit and answer, then exits 0; the token is never printed', async () => {
    const serve = startCli(['serve'], env);
    const base = await listeningUrl(serve.child);
    const port = Number(new URL(base).port);
    const url = `${base}/webhooks/main/${TOKEN}`;

    expect((await post(url, feedbackBody({ id: 1 }))).status).toBe(200);
    expect((await post(`${base}/webhooks/main/wrong-token`, feedbackBody({ id: 2 }))).status).toBe(404);
    expect((await fetch(`${base}/readyz`)).status).toBe(200);

    await withClient(t.url, async (blocker) => {
      await blocker.query(`set search_path = ${searchPath(t.schema)}`);
      await blocker.query('begin');
      await blocker.query('lock table webhook_events in exclusive mode');
      const inFlight = post(url, feedbackBody({ id: 3 }));
      await expect
        .poll(async () => {
          const waiting = await blocker.query<{ n: number }>(
            `select count(*)::int as n from pg_locks where not granted and relation = 'webhook_events'::regclass
           and database = (select oid from pg_database where datname = current_database())`,
          );
          return waiting.rows[0]?.n;
        })
        .toBe(1);
      serve.child.kill('SIGTERM');
      await expect.poll(() => refusesConnections(port)).toBe(true);
      await blocker.query('commit');
      expect((await inFlight).status).toBe(200);
    });

    // No keep-alive connection holds the exit up (the grace period is 25 s).
    const stopping = Date.now();
    const result = await serve.done;
    expect(Date.now() - stopping).toBeLessThan(5000);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('webhook receiver stopped');
    expect(result.stderr).toContain('"url":"/webhooks/main/***"');
    expect(`${result.stdout}${result.stderr}`).not.toContain(TOKEN);
    expect(await count(t, 'feedback')).toBe(2);
  });
});
