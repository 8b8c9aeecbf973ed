import { mkdirSync, writeFileSync } from 'node:fs';
import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createApiClient } from '../../src/api/api-client.js';
import { ApiError, AuthError } from '../../src/errors.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst } from '../helpers/sync-harness.js';
import { truthItems, warehouseItems } from '../helpers/warehouse-truth.js';

/**
 * Guarantee 3 with fake timers: the client's own sleep (setTimeout) and request deadline run on
 * vitest's fake clock, and a fetch stub answers each attempt as scripted, noting the fake time
 * it was called at. The gaps between attempts are then the waits the policy chose.
 * test/api/api-client-retries.test.ts covers the same rules with a recorded sleep and real HTTP.
 */

type Step =
  | { kind: '429'; retryAfter: { seconds: number } | { dateInSeconds: number } }
  | { kind: '5xx'; status: 500 | 502 | 503 | 504 }
  | { kind: 'reset' }
  | { kind: 'stall' }
  | { kind: 'never-retried'; status: 401 | 403 | 404 }
  | { kind: 'ok' };

const T0 = Date.UTC(2026, 2, 10, 12, 0, 0);
const TIMEOUT_MS = 2_000;

/** A fetch that plays `script` (then answers 200 []), noting the fake time of each call. */
function scriptedFetch(script: readonly Step[]) {
  const calls: number[] = [];
  const fetch: typeof globalThis.fetch = (_input, init) => {
    calls.push(Date.now());
    const step = script[calls.length - 1] ?? { kind: 'ok' };
    switch (step.kind) {
      case 'ok':
        return Promise.resolve(Response.json([{ id: 'h1' }]));
      case '429': {
        const value =
          'seconds' in step.retryAfter
            ? String(step.retryAfter.seconds)
            : new Date(Date.now() + step.retryAfter.dateInSeconds * 1000).toUTCString();
        return Promise.resolve(new Response(null, { status: 429, headers: { 'retry-after': value } }));
      }
      case '5xx':
        return Promise.resolve(new Response('{}', { status: step.status }));
      case 'never-retried':
        return Promise.resolve(new Response('{}', { status: step.status }));
      case 'reset':
        return Promise.reject(
          new TypeError('fetch failed', {
            cause: Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }),
          }),
        );
      case 'stall':
        // Never answers: only the client's deadline (an abort on its signal) ends it.
        return new Promise((_resolve, reject) => {
          init?.signal?.addEventListener('abort', () => reject(new DOMException('aborted', 'AbortError')));
        });
    }
  };
  return { fetch, calls };
}

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    kind: fc.constant('429' as const),
    retryAfter: fc.oneof(
      fc.record({ seconds: fc.integer({ min: 0, max: 90 }) }),
      fc.record({ dateInSeconds: fc.integer({ min: 1, max: 90 }) }),
    ),
  }),
  fc.record({
    kind: fc.constant('5xx' as const),
    status: fc.constantFrom(500 as const, 502 as const, 503 as const, 504 as const),
  }),
  fc.constant({ kind: 'reset' as const }),
  fc.constant({ kind: 'stall' as const }),
  fc.record({
    kind: fc.constant('never-retried' as const),
    status: fc.constantFrom(401 as const, 403 as const, 404 as const),
  }),
);

describe('the retry policy, on fake timers', () => {
  beforeAll(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
  });
  afterEach(() => {
    vi.setSystemTime(T0);
  });
  afterAll(() => {
    vi.useRealTimers();
  });

  async function settle<T>(promise: Promise<T>): Promise<{ value?: T; error?: unknown }> {
    const outcome = promise.then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
    await vi.runAllTimersAsync();
    return outcome;
  }

  it('429 with Retry-After in seconds: no second attempt before the time is up, one right after', async () => {
    vi.setSystemTime(T0);
    const { fetch, calls } = scriptedFetch([{ kind: '429', retryAfter: { seconds: 7 } }]);
    const api = createApiClient({
      source: { name: 's', baseUrl: 'http://api.test', apiKey: 'k' },
      fetch,
      random: () => 0,
    });
    const result = api.heatmaps();
    await vi.advanceTimersByTimeAsync(6_999);
    expect(calls).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toHaveLength(2);
    await expect(result).resolves.toEqual([{ id: 'h1' }]);
  });

  it('429 with Retry-After as an HTTP-date: waits until that date', async () => {
    vi.setSystemTime(T0);
    const { fetch, calls } = scriptedFetch([{ kind: '429', retryAfter: { dateInSeconds: 12 } }]);
    const api = createApiClient({
      source: { name: 's', baseUrl: 'http://api.test', apiKey: 'k' },
      fetch,
      random: () => 0,
    });
    const result = api.heatmaps();
    await vi.advanceTimersByTimeAsync(11_999);
    expect(calls).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    await expect(result).resolves.toEqual([{ id: 'h1' }]);
    expect((calls[1] ?? 0) - (calls[0] ?? 0)).toBe(12_000);
  });

  it('a stall is cut by the timeout, and then retried', async () => {
    vi.setSystemTime(T0);
    const { fetch, calls } = scriptedFetch([{ kind: 'stall' }, { kind: 'stall' }]);
    const api = createApiClient({
      source: { name: 's', baseUrl: 'http://api.test', apiKey: 'k' },
      fetch,
      timeoutMs: TIMEOUT_MS,
      random: () => 0,
      retry: { maxAttempts: 2 },
    });
    const { error } = await settle(api.heatmaps());
    expect(calls.map((at) => at - T0)).toEqual([0, TIMEOUT_MS]);
    expect((error as ApiError).message).toMatch(/failed after 2 attempts: network error \(ETIMEDOUT\)/);
  });

  it('property: every wait is what the policy allows, and the attempts stop where they should', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(step, { minLength: 1, maxLength: 7 }),
        fc.array(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), {
          minLength: 8,
          maxLength: 8,
        }),
        fc.record({
          maxAttempts: fc.integer({ min: 1, max: 6 }),
          baseDelayMs: fc.integer({ min: 0, max: 2_000 }),
          maxDelayMs: fc.integer({ min: 0, max: 20_000 }),
          retryAfterCapMs: fc.integer({ min: 0, max: 60_000 }),
        }),
        async (script, jitter, retry) => {
          vi.setSystemTime(T0);
          const { fetch, calls } = scriptedFetch(script);
          let draws = 0;
          const random = () => jitter[draws++ % jitter.length] ?? 0;
          const api = createApiClient({
            source: { name: 's', baseUrl: 'http://api.test', apiKey: 'k' },
            fetch,
            timeoutMs: TIMEOUT_MS,
            random,
            retry,
          });
          const { value, error } = await settle(api.heatmaps());

          // Where it must stop: the first answer that is final, or the last attempt allowed.
          const finalAt = script.findIndex((s) => s.kind === 'never-retried');
          const stopsAt = Math.min(
            retry.maxAttempts,
            finalAt === -1 ? script.length + 1 : finalAt + 1,
            script.length + 1,
          );
          expect(calls).toHaveLength(stopsAt);
          const last = script[stopsAt - 1];
          if (stopsAt === script.length + 1) expect(value).toEqual([{ id: 'h1' }]);
          else if (last?.kind === 'never-retried' && last.status === 401)
            expect(error).toBeInstanceOf(AuthError);
          else expect(error).toBeInstanceOf(ApiError);

          for (let attempt = 1; attempt < calls.length; attempt++) {
            const failed = script[attempt - 1] as Step;
            const gap = (calls[attempt] ?? 0) - (calls[attempt - 1] ?? 0);
            const wait = gap - (failed.kind === 'stall' ? TIMEOUT_MS : 0);
            const ceiling = Math.min(retry.maxDelayMs, retry.baseDelayMs * 2 ** (attempt - 1));
            // Full jitter: a random point below the exponential ceiling, never above the cap.
            const backoff = Math.floor((jitter[(attempt - 1) % jitter.length] ?? 0) * ceiling);
            if (failed.kind === '429') {
              // An HTTP-date has whole seconds: the wait runs until that second, from the answer's time.
              const answeredAt = calls[attempt - 1] ?? 0;
              const asked =
                'seconds' in failed.retryAfter
                  ? failed.retryAfter.seconds * 1000
                  : Math.floor((answeredAt + failed.retryAfter.dateInSeconds * 1000) / 1000) * 1000 -
                    answeredAt;
              const floor = Math.min(asked, retry.retryAfterCapMs);
              expect(wait).toBeGreaterThanOrEqual(floor);
              expect(wait).toBe(Math.max(floor, backoff));
            } else {
              expect(failed.kind).not.toBe('never-retried');
              expect(wait).toBe(backoff);
              expect(wait).toBeLessThanOrEqual(Math.max(0, ceiling));
              expect(wait).toBeLessThanOrEqual(retry.maxDelayMs);
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('a run against a service failing 30% of its requests (429 with HTTP-dates, 5xx, resets, stalls)', () => {
  let t: TestDatabase;
  let sim: Simulator;

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({
      seed: 41,
      from: '2026-03-01',
      to: '2026-03-12',
      cap: 4000,
      faultRate: 0.3,
      retryAfter: 'http-date',
      stallMs: 1_500,
    });
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
  });

  it('converges to the full ground truth within a few runs', async () => {
    const now = new Date('2026-03-13T05:00:00.000Z');
    const settings = { requestTimeoutMs: 300, maxAttempts: 4 };
    const statuses: string[] = [];
    for (let run = 0; run < 6 && statuses.at(-1) !== 'ok'; run++) {
      statuses.push((await runAgainst(t, sim, { now, settings })).status);
    }
    expect(statuses.at(-1), statuses.join(', ')).toBe('ok');
    const { requests, faultsServed } = sim.stats();
    expect(faultsServed).toBeGreaterThan(20);
    mkdirSync('test-output/reliability', { recursive: true });
    writeFileSync(
      'test-output/reliability/fault-rate.json',
      `${JSON.stringify({ runs: statuses, requests, faultsServed }, null, 2)}\n`,
    );
    expect(await warehouseItems(t)).toEqual(truthItems(sim.truth()));
  }, 60_000);
});
