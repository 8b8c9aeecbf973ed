import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENDPOINT_NAMES } from '../../src/simulator/endpoint-names.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { addDays, todayUtc } from '../../src/time/days.js';
import { type CliResult, cliEnv, listeningUrl, runCli, startCli } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { freePort } from '../helpers/free-port.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { feedbackBody } from '../webhooks/webhook-helpers.js';
import { startCountingServer } from './counting-server.js';
import { everyTextOf } from './warehouse-text.js';

/**
 * Guarantee 10: every error path, run through the CLI with canary secrets (the API key, the
 * webhook token, the pii HMAC key, the database password): their stdout, their stderr (the log,
 * at level trace, JSON lines), the log files they are written to, and every row of every table
 * as text hold none of them.
 */

const API_KEY = 'CANARY-api-key-3f9a7c';
const TOKEN = 'CANARY-webhook-token-0123456789abcdef';
// Base64 of 33 bytes (as the key rule asks), starting with the canary marker.
const PII_KEY = 'CANARYpiikeyeX+W+Jj1/HCaeA96EnbkpUckEGZIPhl0';
const DB_PASSWORD = 'CANARY-db-password';
/** A password (and user) in the API's base URL: refused at config time, never quoted. */
const URL_PASSWORD = 'CANARY-url-password';
const URL_USER = 'CANARY-url-user';
const CANARIES = [API_KEY, TOKEN, PII_KEY, DB_PASSWORD, URL_PASSWORD, URL_USER, 'CANARY'];
const LOG_DIR = 'test-output/reliability/canary-logs';

const TODAY = todayUtc(new Date());
const FROM = addDays(TODAY, -6);
const TO = addDays(TODAY, -1);

describe('canary secrets through every error path', () => {
  let t: TestDatabase;
  let sim: Simulator;
  let proxy: TcpProxy;
  let env: Record<string, string>;
  /** The embedded database's password: not a canary (it is random), known once it ran. */
  let embeddedPassword = '';
  /** Each command's name, exit code, and where its output went. */
  const ran: { name: string; code: number | null; log: string }[] = [];

  /** Like a crontab line: stdout and stderr appended to a log file, which is grepped afterwards. */
  function record(name: string, result: CliResult) {
    const log = `${LOG_DIR}/${name.replace(/[^a-z0-9]+/gi, '-')}.log`;
    writeFileSync(log, `${result.stdout}${result.stderr}`);
    ran.push({ name, code: result.code, log });
    return result;
  }

  beforeAll(async () => {
    mkdirSync(LOG_DIR, { recursive: true });
    t = await createTestDatabase();
    sim = await startSimulator({
      seed: 4,
      from: FROM,
      to: TO,
      apiKey: API_KEY,
      faultRate: 0.3,
      malformedRate: 0.1,
      stallMs: 1_000,
      latencyMs: 5,
    });
    const target = new URL(t.url);
    proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    const url = new URL(proxy.urlFor(t.url));
    url.password = DB_PASSWORD;
    env = cliEnv({
      DATABASE_URL: url.toString(),
      INSIGHTS_API_URL: sim.url,
      INSIGHTS_API_KEY: API_KEY,
      INSIGHTS_SOURCE_NAME: 'main',
      INSIGHTS_WEBHOOK_TOKEN: TOKEN,
      INSIGHTS_WEBHOOK_PORT: '0',
      INSIGHTS_WEBHOOK_HOST: '127.0.0.1',
      INSIGHTS_PII: 'hash',
      INSIGHTS_PII_KEY: PII_KEY,
      INSIGHTS_MAX_ATTEMPTS: '2',
      INSIGHTS_REQUEST_TIMEOUT_MS: '300',
      INSIGHTS_RETRY_BASE_MS: '10',
      INSIGHTS_RETRY_MAX_MS: '20',
      INSIGHTS_RETRY_AFTER_CAP_MS: '20',
      INSIGHTS_START_DATE: FROM,
      LOG_LEVEL: 'trace',
    });
  });
  afterAll(async () => {
    await sim.stop();
    await proxy.close();
    await t.drop();
  });

  it('runs every error path', async () => {
    // The API: faults, stalls, malformed items (rejects), a failing run.
    expect(record('sync with faults', await runCli(['sync'], env)).code).not.toBe(2);
    expect(
      record('backfill with faults', await runCli(['backfill', '--from', FROM, '--to', TO], env)).code,
    ).not.toBe(2);
    // A wrong key (the canary with a suffix).
    expect(
      record(
        'sync with a wrong key',
        await runCli(['sync'], { ...env, INSIGHTS_API_KEY: `${API_KEY}-wrong` }),
      ).code,
    ).toBe(3);
    // The API unreachable.
    const closed = await startCountingServer();
    await closed.close();
    record(
      'sync with the API unreachable',
      await runCli(['sync'], { ...env, INSIGHTS_API_URL: `http://127.0.0.1:${closed.port}` }),
    );
    // The database unreachable (its URL holds the password canary).
    await proxy.cut();
    expect(record('sync with the database down', await runCli(['sync'], env)).code).toBe(5);
    await proxy.restore();
    // The database accepting connections and never answering: status gives up (connect timeout).
    proxy.hang();
    expect(record('status with the database not answering', await runCli(['status'], env)).code).toBe(5);
    await proxy.restore();
    // Invalid settings whose values are the canaries.
    expect(
      record('invalid token', await runCli(['sync'], { ...env, INSIGHTS_WEBHOOK_TOKEN: `${TOKEN}/x` })).code,
    ).toBe(2);
    expect(
      record('invalid pii key', await runCli(['sync'], { ...env, INSIGHTS_PII_KEY: 'CANARY-short' })).code,
    ).toBe(2);
    expect(
      record('invalid key', await runCli(['sync'], { ...env, INSIGHTS_API_KEY: `${API_KEY}\n` })).code,
    ).toBe(2);
    // Credentials in the API's base URL, from the environment and from a config file: refused.
    const withCredentials = sim.url.replace('http://', `http://${URL_USER}:${URL_PASSWORD}@`);
    expect(
      record(
        'credentials in INSIGHTS_API_URL',
        await runCli(['sync'], { ...env, INSIGHTS_API_URL: withCredentials }),
      ).code,
    ).toBe(2);
    const configFile = `${LOG_DIR}/sources-with-credentials.json`;
    writeFileSync(
      configFile,
      JSON.stringify({
        sources: [{ name: 'main', base_url: withCredentials, api_key_env: 'INSIGHTS_API_KEY' }],
      }),
    );
    const fileEnv: Record<string, string> = { ...env, INSIGHTS_CONFIG: configFile };
    for (const variable of ['INSIGHTS_API_URL', 'INSIGHTS_WEBHOOK_TOKEN', 'INSIGHTS_PII'])
      delete fileEnv[variable];
    expect(record('credentials in a config file base_url', await runCli(['sync'], fileEnv)).code).toBe(2);
    // Endpoints refusing the key (403, 404): one resource each, then every endpoint (a rejected key).
    sim.setOptions({ forbidden: ['recordings', 'abtesting/detail'], missing: ['heatmaps'] });
    expect(record('sync with refused endpoints', await runCli(['sync'], env)).code).toBe(1);
    sim.setOptions({ forbidden: [...ENDPOINT_NAMES], missing: [] });
    expect(record('sync with every endpoint forbidden', await runCli(['sync'], env)).code).toBe(3);
    sim.setOptions({ forbidden: [] });
    // A run stopped by SIGTERM.
    const stopped = startCli(['backfill', '--from', FROM, '--to', TO], env);
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    stopped.child.kill('SIGTERM');
    record('backfill stopped by SIGTERM', await stopped.done);

    // The webhook receiver: applied, rejected, wrong token, unknown source, too large, not JSON,
    // poisoned, database down (503), shutdown.
    const serve = startCli(['serve'], { ...env, INSIGHTS_WEBHOOK_BODY_LIMIT: '2048' });
    const base = await listeningUrl(serve.child);
    const post = (path: string, body: string, type = 'application/json') =>
      fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': type }, body }).then(
        (r) => r.status,
      );
    const good = `/webhooks/main/${TOKEN}`;
    expect(await post(good, JSON.stringify(feedbackBody({ id: 1 })))).toBe(200);
    expect(await post(good, JSON.stringify({ ...feedbackBody({ id: 2 }), id: 'x' }))).toBe(422);
    expect(await post(`/webhooks/main/${TOKEN}-wrong`, '{}')).toBe(404);
    expect(await post(`/webhooks/nobody/${TOKEN}`, '{}')).toBe(404);
    expect(await post(`/webhooks/${TOKEN}`, '{}')).toBe(404);
    expect(await post(good, JSON.stringify({ comment: 'x'.repeat(4_000) }))).toBe(413);
    expect(await post(good, `{"broken": "${TOKEN}`)).toBe(400);
    expect(await post(good, 'text', 'text/plain')).toBe(415);
    expect(await post(good, '{"__proto__":{"x":1}}')).toBe(400);
    await proxy.cut();
    expect(await post(good, JSON.stringify(feedbackBody({ id: 3 })))).toBe(503);
    await proxy.restore();
    serve.child.kill('SIGTERM');
    record('serve', await serve.done);

    // The other commands, after all that.
    record('webhooks replay', await runCli(['webhooks', 'replay'], env));
    record('status', await runCli(['status', '--json'], env));
    record('forget', await runCli(['forget', '--visitor', 'v-1'], env));
    record('migrate', await runCli(['migrate'], env));
    // The embedded database (no DATABASE_URL): its connection string is printed, its password
    // (random, read back from its file afterwards) masked.
    const embeddedDir = mkdtempSync(join(tmpdir(), 'insights-sync-canary-embedded-'));
    try {
      const embeddedEnv: Record<string, string> = {
        ...env,
        INSIGHTS_DATA_DIR: embeddedDir,
        INSIGHTS_EMBEDDED_PORT: String(await freePort()),
        INSIGHTS_EMBEDDED: '1',
      };
      delete embeddedEnv.DATABASE_URL;
      // migrate: status does not migrate a new embedded database (it says so, exit 2).
      expect(record('migrate on the embedded database', await runCli(['migrate'], embeddedEnv)).code).toBe(0);
      embeddedPassword = readFileSync(join(embeddedDir, 'insights-sync.password'), 'utf8').trim();
    } finally {
      rmSync(embeddedDir, { recursive: true, force: true });
    }
    expect(ran).toHaveLength(20);
  }, 240_000);

  it('no canary in any stdout, stderr or log file, nor in any row of any table', async () => {
    const hits: string[] = [];
    expect(embeddedPassword.length).toBeGreaterThanOrEqual(20);
    for (const { name, log } of ran) {
      const text = readFileSync(log, 'utf8');
      expect(text.length, name).toBeGreaterThan(0);
      for (const canary of [...CANARIES, embeddedPassword])
        if (text.includes(canary))
          hits.push(`${name}: ${canary === embeddedPassword ? 'embedded password' : canary}`);
    }
    const rows = await everyTextOf(t);
    expect(rows.length).toBeGreaterThan(5_000);
    for (const canary of CANARIES) if (rows.includes(canary)) hits.push(`database: ${canary}`);
    expect(hits).toEqual([]);
  });
});
