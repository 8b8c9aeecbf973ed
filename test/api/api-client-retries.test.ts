import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type ApiClientOptions, createApiClient } from '../../src/api/api-client.js';
import { NetworkError } from '../../src/api/sanitize.js';
import { ApiError, AuthError, EndpointRefusedError } from '../../src/errors.js';
import {
  captureLogger,
  closedPortUrl,
  type FixtureServer,
  json,
  recordingSleep,
  rejectionOf,
  resetMidBody,
  sequence,
  stall,
  stallMidBody,
  startFixtureServer,
  status,
  text,
} from './fixture-server.js';

const QUERY = { startdate: '2024-05-01', enddate: '2024-05-02', limit: 500 };
const NOW = Date.UTC(2024, 4, 1, 12, 0, 0);

let server: FixtureServer;
let sleeper: ReturnType<typeof recordingSleep>;

beforeEach(async () => {
  server = await startFixtureServer();
  sleeper = recordingSleep();
});

afterEach(async () => {
  await server.close();
});

function client(overrides: Partial<ApiClientOptions> = {}) {
  return createApiClient({
    source: { name: 'shop', baseUrl: server.baseUrl, apiKey: 'key' },
    sleep: sleeper.sleep,
    random: () => 0,
    now: () => NOW,
    ...overrides,
  });
}

describe('429 and Retry-After', () => {
  it('waits at least Retry-After seconds', async () => {
    server.script(status(429, { 'retry-after': '7' }), json([{ id: 1 }]));
    await expect(client().heatmaps()).resolves.toEqual([{ id: 1 }]);
    expect(sleeper.delays).toEqual([7_000]);
    expect(server.requests).toHaveLength(2);
  });

  it('waits until a Retry-After HTTP-date', async () => {
    const at = new Date(NOW + 12_000).toUTCString();
    server.script(status(429, { 'retry-after': at }), json([]));
    await client().heatmaps();
    expect(sleeper.delays).toEqual([12_000]);
  });

  it('honours Retry-After on 503 too', async () => {
    server.script(status(503, { 'retry-after': '3' }), json([]));
    await client().heatmaps();
    expect(sleeper.delays).toEqual([3_000]);
  });

  it('clamps a long Retry-After to retryAfterCapMs', async () => {
    server.script(status(429, { 'retry-after': '3600' }), status(429, { 'retry-after': '3600' }), json([]));
    await client({ retry: { retryAfterCapMs: 5_000 } }).heatmaps();
    expect(sleeper.delays).toEqual([5_000, 5_000]);
  });

  it('keeps the jittered backoff when it is longer than Retry-After', async () => {
    server.script(status(429, { 'retry-after': '1' }), json([]));
    await client({ random: () => 0.999, retry: { baseDelayMs: 4_000 } }).heatmaps();
    expect(sleeper.delays).toEqual([3_996]);
  });

  it('falls back to backoff when Retry-After is unparsable', async () => {
    server.script(status(429, { 'retry-after': 'later' }), json([]));
    await client({ random: () => 0.5 }).heatmaps();
    expect(sleeper.delays).toEqual([250]);
  });
});

describe("the source's request budget (pace)", () => {
  it('is waited for before every attempt, a retry after a 429 included, and before nothing else', async () => {
    server.script(status(429, { 'retry-after': '1' }), status(503), json([{ id: 1 }]));
    const events: string[] = [];
    const paced = client({
      pace: async () => {
        events.push(`pace before request ${server.requests.length + 1}`);
      },
      sleep: async (ms) => {
        events.push(`backoff ${ms}`);
      },
    });
    await expect(paced.heatmaps()).resolves.toEqual([{ id: 1 }]);
    expect(events).toEqual([
      'pace before request 1',
      'backoff 1000',
      'pace before request 2',
      'backoff 0',
      'pace before request 3',
    ]);
    expect(server.requests).toHaveLength(3);
  });

  it('is cut short by the signal: the request is never sent', async () => {
    server.script(json([]));
    const controller = new AbortController();
    const paced = client({
      signal: controller.signal,
      pace: (signal) =>
        new Promise((_resolve, reject) =>
          signal?.addEventListener('abort', () => reject(new Error('wait aborted')), { once: true }),
        ),
    });
    const pending = paced.heatmaps();
    controller.abort(new Error('shutdown'));
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    expect(server.requests).toHaveLength(0);
  });
});

describe('5xx: bounded exponential backoff with full jitter', () => {
  it('grows the delay ceiling, caps it, and stops after maxAttempts', async () => {
    server.script(status(500));
    const api = client({ random: () => 1, retry: { maxAttempts: 5, baseDelayMs: 100, maxDelayMs: 500 } });

    const error = await rejectionOf(api.window('feedback', QUERY, { day: '2024-05-01' }));

    expect(sleeper.delays).toEqual([100, 200, 400, 500]);
    expect(server.requests).toHaveLength(5);
    expect(api.requestCount()).toBe(5);
    expect(error).toBeInstanceOf(ApiError);
    const apiError = error as ApiError;
    expect(apiError.retryable).toBe(true);
    expect(apiError.message).toBe('GET /v1/feedback failed after 5 attempts: HTTP 500');
    expect(apiError.context).toEqual({
      source: 'shop',
      resource: 'feedback',
      day: '2024-05-01',
      status: 500,
      url: `${server.baseUrl}/v1/feedback?startdate=2024-05-01&enddate=2024-05-02&limit=500`,
    });
  });

  it('jitters each delay within its ceiling', async () => {
    server.script(status(503));
    const api = client({
      random: sequence(0.5, 0.25, 0.9, 0.1),
      retry: { maxAttempts: 5, baseDelayMs: 100, maxDelayMs: 500 },
    });
    await rejectionOf(api.heatmaps());
    expect(sleeper.delays).toEqual([50, 50, 360, 50]);
  });

  it.each([500, 502, 503, 504])('recovers after HTTP %i', async (code) => {
    server.script(status(code), json([{ ok: true }]));
    const api = client();
    await expect(api.listTests('personalization')).resolves.toEqual([{ ok: true }]);
    expect(api.requestCount()).toBe(2);
  });

  it('logs each retry with the operator context', async () => {
    const { lines, logger } = captureLogger();
    server.script(status(502), status(503), json([]));
    await client({ logger }).window('survey', QUERY, { day: '2024-05-01' });

    const entries = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(entries).toHaveLength(2);
    expect(entries[0]).toMatchObject({
      level: 'debug',
      source: 'shop',
      resource: 'survey',
      day: '2024-05-01',
      status: 502,
      attempt: 1,
      delayMs: 0,
    });
    expect(entries[1]).toMatchObject({ level: 'warn', status: 503, attempt: 2 });
  });
});

describe('network failures', () => {
  it('retries a connection reset mid-body, then gives up with the cause kept small', async () => {
    server.script(resetMidBody());
    const api = client({ retry: { maxAttempts: 3 } });

    const error = await rejectionOf(api.heatmaps());

    expect(server.requests).toHaveLength(3);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).retryable).toBe(true);
    expect((error as ApiError).message).toMatch(/^GET \/v1\/heatmaps failed after 3 attempts: network error/);
    const cause = (error as ApiError).cause;
    expect(cause).toBeInstanceOf(NetworkError);
    expect((cause as NetworkError).cause).toBeUndefined();
  });

  it('recovers when the next attempt succeeds', async () => {
    server.script(resetMidBody(), json([{ id: 'x' }]));
    await expect(client().heatmaps()).resolves.toEqual([{ id: 'x' }]);
    expect(server.requests).toHaveLength(2);
  });

  it('retries a refused connection', async () => {
    const api = client({
      source: { name: 'shop', baseUrl: await closedPortUrl(), apiKey: 'key' },
      retry: { maxAttempts: 2 },
    });
    const error = await rejectionOf(api.heatmaps());
    expect(api.requestCount()).toBe(2);
    expect((error as ApiError).message).toContain('ECONNREFUSED');
  });

  it('cuts a response whose headers never come', async () => {
    server.script(stall());
    const api = client({ timeoutMs: 100, retry: { maxAttempts: 2 } });
    const started = performance.now();

    const error = await rejectionOf(api.heatmaps());

    expect(performance.now() - started).toBeLessThan(2_000);
    expect(server.requests).toHaveLength(2);
    expect(api.requestCount()).toBe(2);
    expect((error as ApiError).retryable).toBe(true);
    expect((error as ApiError).message).toBe(
      'GET /v1/heatmaps failed after 2 attempts: network error (ETIMEDOUT): timeout: no complete response within 100 ms',
    );
  });

  it('cuts a body that stalls halfway', async () => {
    server.script(stallMidBody(), json([1]));
    const api = client({ timeoutMs: 100 });
    await expect(api.heatmaps()).resolves.toEqual([1]);
    expect(api.requestCount()).toBe(2);
  });
});

describe('failures that are never retried', () => {
  it('HTTP 401 is an AuthError after exactly one request', async () => {
    server.script(status(401), json([]));
    const api = client();

    const error = await rejectionOf(api.listTests('abtesting'));

    expect(error).toBeInstanceOf(AuthError);
    expect((error as AuthError).message).toBe(
      `API key rejected by ${server.baseUrl} for source shop (HTTP 401)`,
    );
    expect((error as AuthError).retryable).toBe(false);
    expect(server.requests).toHaveLength(1);
    expect(sleeper.delays).toEqual([]);
  });

  it.each([
    [403, 'recordings', 'this key may not read recordings; the other resources go on'],
    [404, 'recordings', 'the server does not serve recordings; the other resources go on'],
  ] as const)(
    'HTTP %i on one endpoint refuses that resource only, after one request',
    async (code, resource, why) => {
      server.script(status(code), json([]));
      const api = client();

      const error = await rejectionOf(api.window(resource, QUERY, { day: '2024-05-01' }));

      expect(error).toBeInstanceOf(EndpointRefusedError);
      expect(error).not.toBeInstanceOf(AuthError);
      expect((error as EndpointRefusedError).message).toBe(
        `GET /v1/${resource} refused with HTTP ${code} for source shop: ${why}`,
      );
      expect(error).toMatchObject({ status: code, resource, retryable: false });
      expect((error as ApiError).context).toMatchObject({ status: code, resource, day: '2024-05-01' });
      expect(server.requests).toHaveLength(1);
      expect(sleeper.delays).toEqual([]);
    },
  );

  it("a detail's 404 says the service knows no such test", async () => {
    server.script(status(404));
    const error = await rejectionOf(client().testResults('abtesting', 'gone'));
    expect(error).toBeInstanceOf(EndpointRefusedError);
    expect((error as ApiError).message).toBe(
      'GET /v1/abtesting/detail/gone refused with HTTP 404 for source shop: the server knows no such test',
    );
  });

  it.each([400, 405, 410, 422, 501])('HTTP %i is a permanent ApiError after one request', async (code) => {
    server.script(status(code), json([]));
    const api = client();

    const error = await rejectionOf(api.testResults('abtesting', 'gone'));

    expect(error).toBeInstanceOf(ApiError);
    expect(error).not.toBeInstanceOf(AuthError);
    expect(error).not.toBeInstanceOf(EndpointRefusedError);
    expect((error as ApiError).retryable).toBe(false);
    expect((error as ApiError).message).toBe(`GET /v1/abtesting/detail/gone failed: HTTP ${code}`);
    expect((error as ApiError).context).toMatchObject({ status: code, resource: 'abtesting/detail' });
    expect(api.requestCount()).toBe(1);
  });

  it.each([408, 425])('HTTP %i is transient: retried', async (code) => {
    server.script(status(code), json([1]));
    const api = client();
    await expect(api.heatmaps()).resolves.toEqual([1]);
    expect(api.requestCount()).toBe(2);
  });

  it.each([
    [
      'credentials',
      'http://user:secret@127.0.0.1:9',
      'holds credentials (user:password@); the API key goes in the Authorization header',
    ],
    ['a trailing /v1', 'http://127.0.0.1:9/v1', 'ends in /v1, which the client adds to every path itself'],
    ['not a URL', 'not a url', 'is not a valid URL'],
    ['a query string', 'http://127.0.0.1:9/?a=1', 'has a query string or a fragment'],
  ])(
    'a base URL with %s is refused before any request, never retried, never quoted',
    async (_name, baseUrl, problem) => {
      const fetched: string[] = [];
      const api = createApiClient({
        source: { name: 'shop', baseUrl, apiKey: 'key' },
        sleep: sleeper.sleep,
        fetch: async (input) => {
          fetched.push(String(input));
          return new Response('[]');
        },
      });
      const error = await rejectionOf(api.heatmaps());
      expect(error).toBeInstanceOf(ApiError);
      expect((error as ApiError).retryable).toBe(false);
      expect((error as ApiError).message).toBe(
        `GET /v1/heatmaps not sent: the base URL of source shop ${problem}`,
      );
      expect((error as ApiError).context.url).toBeUndefined();
      expect(api.baseUrl).toBe('[unusable base URL]');
      expect(fetched).toEqual([]);
      expect(api.requestCount()).toBe(0);
      expect(sleeper.delays).toEqual([]);
    },
  );

  it('does not follow a redirect (the key would go with it)', async () => {
    server.script(status(302, { location: 'http://example.invalid/steal' }));
    const error = await rejectionOf(client().heatmaps());
    expect((error as ApiError).message).toBe(
      'GET /v1/heatmaps failed: HTTP 302 (redirects are not followed)',
    );
    expect(server.requests).toHaveLength(1);
  });

  it('a permanent error after a retry says which attempt', async () => {
    server.script(status(503), status(410));
    const error = await rejectionOf(client().heatmaps());
    expect((error as ApiError).message).toBe('GET /v1/heatmaps failed on attempt 2: HTTP 410');
  });
});

describe('a 200 that is not a JSON array', () => {
  const page = `<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head><body>${'x'.repeat(5_000)}</body></html>`;

  it('an HTML page is retried, then named without dumping the body', async () => {
    server.script(text(page));
    const api = client({ retry: { maxAttempts: 2 } });

    const error = await rejectionOf(api.heatmaps());

    expect(api.requestCount()).toBe(2);
    expect((error as ApiError).retryable).toBe(true);
    const { message } = error as ApiError;
    expect(message).toMatch(
      /^GET \/v1\/heatmaps failed after 2 attempts: response is not JSON \(body starts with "<!DOCTYPE html> <html>/,
    );
    expect(message.length).toBeLessThan(200);
  });

  it('a transient HTML page is followed by the real answer', async () => {
    server.script(text(page), json([{ id: 1 }]));
    await expect(client().heatmaps()).resolves.toEqual([{ id: 1 }]);
  });

  it.each([
    [{ items: [] }, 'object'],
    ['oops', 'string'],
    [null, 'null'],
  ])('JSON %j is not an array', async (body, type) => {
    server.script(json(body));
    const error = await rejectionOf(client({ retry: { maxAttempts: 1 } }).heatmaps());
    expect((error as ApiError).message).toBe(
      `GET /v1/heatmaps failed after 1 attempt: expected a JSON array, got ${type}`,
    );
  });

  it('an empty body says so', async () => {
    server.script(text('', 200, 'application/json'));
    const error = await rejectionOf(client({ retry: { maxAttempts: 1 } }).heatmaps());
    expect((error as ApiError).message).toBe(
      'GET /v1/heatmaps failed after 1 attempt: response is not JSON (empty body)',
    );
  });
});
