import { getEventListeners, setMaxListeners } from 'node:events';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { abortableSleep } from '../../src/api/abort.js';
import { getJsonArray } from '../../src/api/http-client.js';
import { type FixtureServer, json, rejectionOf, stall, startFixtureServer } from './fixture-server.js';

/**
 * One run's shutdown signal is shared by every request and backoff sleep of every source: 30
 * sources on the queue path are 30 requests in flight on it at once. Node warns past 10 listeners
 * on one signal (MaxListenersExceededWarning), a line on stderr outside the log format; a request
 * or sleep must therefore put no listener on the shared signal at all. Node 22 and later no longer
 * warn for an AbortSignal by default; Node 20 did, and each test
 * gives its signal that limit of 10 explicitly, so that it warns on every Node.
 */
let server: FixtureServer;
let warnings: Error[];
const onWarning = (warning: Error) => warnings.push(warning);

beforeEach(async () => {
  server = await startFixtureServer();
  warnings = [];
  process.on('warning', onWarning);
});

afterEach(async () => {
  process.off('warning', onWarning);
  await server.close();
});

/** A controller whose signal warns past 10 listeners, as every signal does on Node 20. */
function sharedController(): AbortController {
  const controller = new AbortController();
  setMaxListeners(10, controller.signal);
  return controller;
}

/** Warnings are emitted on a later tick: wait for them before looking. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

function request(signal: AbortSignal, path: string) {
  return getJsonArray({
    url: `${server.baseUrl}${path}`,
    label: path,
    apiKey: 'key',
    timeoutMs: 10_000,
    fetch: globalThis.fetch,
    signal,
  });
}

describe('a signal shared by many requests', () => {
  it('gets no listener per request: 40 concurrent requests give no warning, and none is left after', async () => {
    const controller = sharedController();
    let inFlight = 0;
    let most = 0;
    let mostListeners = 0;
    server.script((req, res) => {
      inFlight++;
      most = Math.max(most, inFlight);
      mostListeners = Math.max(mostListeners, getEventListeners(controller.signal, 'abort').length);
      // Answer only once all are in flight, so that they overlap for certain.
      const answer = () => {
        inFlight--;
        json([{ id: 1 }])(req, res);
      };
      setTimeout(answer, 100);
    });
    const outcomes = await Promise.all(
      Array.from({ length: 40 }, (_, i) => request(controller.signal, `/v1/feedback?n=${i}`)),
    );
    await settle();
    expect(most).toBeGreaterThan(10);
    expect(outcomes.every((o) => o.kind === 'ok')).toBe(true);
    expect(warnings.map((w) => w.message)).toEqual([]);
    expect(mostListeners).toBe(0);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('still cuts every request in flight when it aborts', async () => {
    server.script(stall());
    const controller = sharedController();
    const pending = Array.from({ length: 20 }, (_, i) => request(controller.signal, `/v1/feedback?n=${i}`));
    setTimeout(() => controller.abort(new Error('received SIGTERM')), 50);
    const errors = await Promise.all(pending.map((p) => rejectionOf(p)));
    await settle();
    expect(errors.map((e) => (e as Error).name)).toEqual(Array(20).fill('AbortError'));
    expect(warnings.map((w) => w.message)).toEqual([]);
  });

  it('gets no listener per backoff sleep, and a sleep still ends when it aborts', async () => {
    const controller = sharedController();
    const sleeps = Array.from({ length: 40 }, () => abortableSleep(10_000, controller.signal));
    await settle();
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    controller.abort();
    const errors = await Promise.all(sleeps.map((p) => rejectionOf(p)));
    await settle();
    expect(errors.map((e) => (e as Error).name)).toEqual(Array(40).fill('AbortError'));
    expect(warnings.map((w) => w.message)).toEqual([]);
  });

  it('leaves no listener on it after sleeps that ran out', async () => {
    const controller = sharedController();
    await Promise.all(Array.from({ length: 20 }, () => abortableSleep(5, controller.signal)));
    await settle();
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    expect(warnings.map((w) => w.message)).toEqual([]);
  });
});
