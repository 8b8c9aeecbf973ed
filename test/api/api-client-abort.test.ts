import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { abortableSleep } from '../../src/api/abort.js';
import { createApiClient } from '../../src/api/api-client.js';
import { ApiError } from '../../src/errors.js';
import { type FixtureServer, rejectionOf, stall, startFixtureServer, status } from './fixture-server.js';

let server: FixtureServer;

beforeEach(async () => {
  server = await startFixtureServer();
});

afterEach(async () => {
  await server.close();
});

function client(signal: AbortSignal) {
  // Real sleep and a long timeout: only the signal can end these calls quickly.
  return createApiClient({
    source: { name: 'shop', baseUrl: server.baseUrl, apiKey: 'key' },
    timeoutMs: 10_000,
    signal,
  });
}

async function expectPromptAbort(promise: Promise<unknown>, started: number): Promise<void> {
  const error = await rejectionOf(promise);
  expect(performance.now() - started).toBeLessThan(1_000);
  expect(error).toBeInstanceOf(Error);
  expect((error as Error).name).toBe('AbortError');
  expect(error).not.toBeInstanceOf(ApiError);
}

describe('abort via signal', () => {
  it('cuts the request in flight and does not retry', async () => {
    server.script(stall());
    const controller = new AbortController();
    const api = client(controller.signal);
    const started = performance.now();
    setTimeout(() => controller.abort(), 50);

    await expectPromptAbort(api.heatmaps(), started);
    expect(api.requestCount()).toBe(1);
  });

  it('interrupts a backoff sleep', async () => {
    server.script(status(429, { 'retry-after': '30' }));
    const controller = new AbortController();
    const api = client(controller.signal);
    const started = performance.now();
    setTimeout(() => controller.abort(), 100);

    await expectPromptAbort(api.heatmaps(), started);
    expect(api.requestCount()).toBe(1);
  });

  it('sends nothing once aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    const api = client(controller.signal);

    await expectPromptAbort(api.listTests('abtesting'), performance.now());
    expect(api.requestCount()).toBe(0);
    expect(server.requests).toHaveLength(0);
  });

  it('stops even when an injected sleep ignores the signal', async () => {
    server.script(status(503));
    const controller = new AbortController();
    const api = createApiClient({
      source: { name: 'shop', baseUrl: server.baseUrl, apiKey: 'key' },
      signal: controller.signal,
      sleep: async () => {
        controller.abort();
      },
    });

    await expectPromptAbort(api.heatmaps(), performance.now());
    expect(api.requestCount()).toBe(1);
  });
});

describe('abortableSleep', () => {
  it('resolves after the delay', async () => {
    await expect(abortableSleep(5)).resolves.toBeUndefined();
  });

  it('rejects as soon as the signal aborts', async () => {
    const controller = new AbortController();
    const started = performance.now();
    setTimeout(() => controller.abort(), 20);
    await expectPromptAbort(abortableSleep(60_000, controller.signal), started);
  });
});
