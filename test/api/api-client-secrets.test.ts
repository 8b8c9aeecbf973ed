/**
 * The API key stays in memory: no error message, context, cause chain or log line may carry it,
 * whatever went wrong, even when the server or fetch itself echoes it back.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type ApiClientOptions, createApiClient } from '../../src/api/api-client.js';
import {
  captureLogger,
  closedPortUrl,
  everythingSaidBy,
  type FixtureServer,
  type Handler,
  json,
  recordingSleep,
  rejectionOf,
  resetMidBody,
  stall,
  startFixtureServer,
  status,
  text,
} from './fixture-server.js';

const CANARY = 'CANARY-KEY-123';

let server: FixtureServer;

beforeEach(async () => {
  server = await startFixtureServer();
});

afterEach(async () => {
  await server.close();
});

async function failWith(overrides: Partial<ApiClientOptions>): Promise<{ said: string; logs: string }> {
  const { lines, logger } = captureLogger();
  const api = createApiClient({
    source: { name: 'shop', baseUrl: server.baseUrl, apiKey: CANARY },
    sleep: recordingSleep().sleep,
    timeoutMs: 100,
    retry: { maxAttempts: 3 },
    logger,
    ...overrides,
  });
  const error = await rejectionOf(
    api.window('feedback', { startdate: '2024-05-01', enddate: '2024-05-02', limit: 10 }),
  );
  return { said: everythingSaidBy(error), logs: lines.join('') };
}

const echoedInHtml: Handler = (req, res) => {
  res.writeHead(200, { 'content-type': 'text/html' });
  res.end(`<html>bad key ${String(req.headers.authorization)}</html>`);
};

const echoedInJson: Handler = (req, res) => {
  res.writeHead(500, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ error: 'nope', authorization: req.headers.authorization }));
};

describe(`the key (${CANARY}) never leaks`, () => {
  it.each<[string, Handler]>([
    ['401', status(401)],
    ['403', status(403)],
    ['404', status(404)],
    ['500 until attempts run out', status(500)],
    ['429 with Retry-After', status(429, { 'retry-after': '1' })],
    ['connection reset mid-body', resetMidBody()],
    ['stall', stall()],
    ['HTML page echoing the key', echoedInHtml],
    ['error JSON echoing the key', echoedInJson],
    ['non-array JSON', json({ authorization: CANARY })],
    ['short HTML page', text('<h1>Service unavailable</h1>')],
  ])('%s', async (_name, handler) => {
    server.script(handler);
    const { said, logs } = await failWith({});
    expect(said).not.toContain(CANARY);
    expect(logs).not.toContain(CANARY);
    expect(said.length).toBeGreaterThan(0);
  });

  it('connection refused', async () => {
    const baseUrl = await closedPortUrl();
    const { said, logs } = await failWith({ source: { name: 'shop', baseUrl, apiKey: CANARY } });
    expect(said).toContain('ECONNREFUSED');
    expect(said).not.toContain(CANARY);
    expect(logs).not.toContain(CANARY);
  });

  it('a fetch error that carries the request headers and quotes the key', async () => {
    const leakyFetch: typeof globalThis.fetch = async (_input, init) => {
      const inner = Object.assign(new Error(`socket hang up while sending ${CANARY}`), {
        code: 'ECONNRESET',
        request: { headers: init?.headers },
      });
      throw new TypeError('fetch failed', { cause: inner });
    };
    const { said, logs } = await failWith({ fetch: leakyFetch });
    expect(said).toContain('ECONNRESET');
    expect(said).toContain('socket hang up while sending [redacted]');
    expect(said).not.toContain(CANARY);
    expect(logs).not.toContain(CANARY);
  });

  it('a key that is not a valid header value is refused before fetch can quote it', async () => {
    const badKey = `${CANARY}\r\nX-Injected: 1`;
    const api = createApiClient({ source: { name: 'shop', baseUrl: server.baseUrl, apiKey: badKey } });
    const said = everythingSaidBy(await rejectionOf(api.heatmaps()));
    expect(said).toContain('API key contains characters not allowed in a header');
    expect(said).not.toContain(CANARY);
    expect(api.requestCount()).toBe(0);
  });

  it('a base URL holding a password is refused before any request, and never quoted', async () => {
    const password = 'CANARY-URL-PASSWORD';
    const withPassword = server.baseUrl.replace('http://', `http://CANARY-URL-USER:${password}@`);
    const { lines, logger } = captureLogger();
    const api = createApiClient({
      source: { name: 'shop', baseUrl: withPassword, apiKey: CANARY },
      sleep: recordingSleep().sleep,
      retry: { maxAttempts: 5 },
      logger,
    });
    const error = await rejectionOf(
      api.window('feedback', { startdate: '2024-05-01', enddate: '2024-05-02', limit: 10 }),
    );
    const said = everythingSaidBy(error);
    expect(said).toContain('holds credentials');
    for (const secret of [password, CANARY, 'CANARY-URL-USER']) {
      expect(said).not.toContain(secret);
      expect(lines.join('')).not.toContain(secret);
      expect(api.baseUrl).not.toContain(secret);
    }
    expect(api.requestCount()).toBe(0);
    expect(server.requests).toHaveLength(0);
  });

  it('a fetch error quoting a URL with credentials is scrubbed of them', async () => {
    const password = 'CANARY-URL-PASSWORD';
    const quotingFetch: typeof globalThis.fetch = async () => {
      throw new TypeError(
        `Request cannot be constructed from a URL that includes credentials: http://u:${password}@h/v1/feedback`,
      );
    };
    const { said, logs } = await failWith({ fetch: quotingFetch });
    expect(said).toContain('http://[redacted]@h/v1/feedback');
    expect(said).not.toContain(password);
    expect(logs).not.toContain(password);
  });
});
