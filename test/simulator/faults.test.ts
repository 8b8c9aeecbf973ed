import { describe, expect, it } from 'vitest';
import { feedbackSchema } from '../../src/schemas/feedback.js';
import { recordingSchema } from '../../src/schemas/recording.js';
import { surveyAnswerSchema } from '../../src/schemas/survey-answer.js';
import { startSimulator } from '../../src/simulator/server.js';
import { get, getArray, keyOf, SHORT_RANGE, withSimulator } from './sim-helpers.js';

describe('fault injection (faultRate, faults)', () => {
  it("'429' answers Too Many Requests with Retry-After in seconds by default", async () => {
    await withSimulator({ faultRate: 1, faults: ['429'] }, async (simulator) => {
      const { status, headers, body } = await get(simulator, '/v1/feedback');
      expect(status).toBe(429);
      expect(headers.get('retry-after')).toBe('1');
      expect(body).toMatchObject({ error: 'rate_limited', message: expect.any(String) });
    });
  });

  it("'429' can carry Retry-After as an HTTP-date a moment ahead", async () => {
    await withSimulator({ faultRate: 1, faults: ['429'], retryAfter: 'http-date' }, async (simulator) => {
      const before = Date.now();
      const { status, headers } = await get(simulator, '/v1/heatmaps');
      expect(status).toBe(429);
      const value = headers.get('retry-after') ?? '';
      expect(value).toMatch(/^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/);
      const at = Date.parse(value);
      expect(at).toBeGreaterThan(before);
      expect(at).toBeLessThanOrEqual(before + 5000);
    });
  });

  it.each([
    ['500', 'internal_error'],
    ['503', 'unavailable'],
  ] as const)("'%s' answers that status with a JSON error body", async (kind, error) => {
    await withSimulator({ faultRate: 1, faults: [kind] }, async (simulator) => {
      const { status, body } = await get(simulator, '/v1/abtesting');
      expect(status).toBe(Number(kind));
      expect(body).toMatchObject({ error, message: expect.any(String) });
    });
  });

  it("'reset' sends headers and part of the body, then drops the connection", async () => {
    await withSimulator({ faultRate: 1, faults: ['reset'] }, async (simulator) => {
      const read = fetch(`${simulator.url}/v1/feedback`, {
        headers: { authorization: simulator.apiKey },
      }).then((response) => response.text());
      await expect(read).rejects.toThrow();
      expect(simulator.stats().faultsServed).toBe(1);
    });
  });

  it("'stall' hangs for stallMs: a client with a shorter timeout gives up", async () => {
    await withSimulator({ faultRate: 1, faults: ['stall'], stallMs: 5000 }, async (simulator) => {
      const started = Date.now();
      const request = get(simulator, '/v1/survey', { signal: AbortSignal.timeout(150) });
      await expect(request).rejects.toThrow(/timeout|abort/i);
      expect(Date.now() - started).toBeLessThan(2000);
    });
  });

  it("'stall' only delays: after stallMs the normal answer comes", async () => {
    await withSimulator({ faultRate: 1, faults: ['stall'], stallMs: 120 }, async (simulator) => {
      const started = Date.now();
      const { status, body } = await get(simulator, '/v1/recordings');
      expect(Date.now() - started).toBeGreaterThanOrEqual(100);
      expect(status).toBe(200);
      expect(body).toEqual(simulator.truth().recordings);
    });
  });

  it('stop() ends stalled requests at once instead of waiting for them', async () => {
    const simulator = await startSimulator({
      ...SHORT_RANGE,
      faultRate: 1,
      faults: ['stall'],
      stallMs: 60_000,
    });
    const request = get(simulator, '/v1/feedback');
    request.catch(() => undefined);
    await expect.poll(() => simulator.stats().inFlight).toBe(1);
    const started = Date.now();
    await simulator.stop();
    expect(Date.now() - started).toBeLessThan(1000);
    await expect(request).rejects.toThrow();
  });

  it('checks the API key first: a bad key is a 401, never a fault', async () => {
    await withSimulator({ faultRate: 1 }, async (simulator) => {
      for (let i = 0; i < 5; i++) {
        expect((await get(simulator, '/v1/feedback', { headers: { authorization: 'wrong' } })).status).toBe(
          401,
        );
      }
      expect(simulator.stats().faultsServed).toBe(0);
    });
  });

  it('fails about faultRate of the requests, drawing from all kinds by default, in a seed-fixed sequence', async () => {
    const statuses = async (): Promise<number[]> =>
      withSimulator({ faultRate: 0.5, faults: ['429', '500', '503'] }, async (simulator) => {
        const seen: number[] = [];
        for (let i = 0; i < 40; i++) seen.push((await get(simulator, '/v1/heatmaps')).status);
        expect(simulator.stats().faultsServed).toBe(seen.filter((status) => status !== 200).length);
        return seen;
      });
    const first = await statuses();
    expect(await statuses()).toEqual(first);
    const failed = first.filter((status) => status !== 200).length;
    expect(failed).toBeGreaterThan(8);
    expect(failed).toBeLessThan(32);
    expect(new Set(first)).toEqual(new Set([200, 429, 500, 503]));
  });

  it('can be switched off and on with setOptions', async () => {
    await withSimulator({ faultRate: 1, faults: ['500'] }, async (simulator) => {
      expect((await get(simulator, '/v1/heatmaps')).status).toBe(500);
      simulator.setOptions({ faultRate: 0 });
      expect((await get(simulator, '/v1/heatmaps')).status).toBe(200);
      simulator.setOptions({ faultRate: 1, faults: ['503'] });
      expect((await get(simulator, '/v1/heatmaps')).status).toBe(503);
    });
  });
});

describe('malformedRate', () => {
  const schemas = {
    feedback: feedbackSchema,
    survey: surveyAnswerSchema,
    recordings: recordingSchema,
  } as const;

  it('serves a share of windowed items broken, exactly those listed in truth().malformed', async () => {
    await withSimulator({ malformedRate: 0.2 }, async (simulator) => {
      const truth = simulator.truth();
      for (const resource of ['feedback', 'survey', 'recordings'] as const) {
        const served = await getArray(simulator, `/v1/${resource}`);
        const broken = served.filter((item) => !schemas[resource].safeParse(item).success);
        const valid = served.filter((item) => schemas[resource].safeParse(item).success);
        expect(broken.length).toBeGreaterThan(0);
        expect(broken).toEqual(truth.malformed[resource]);
        expect(valid).toEqual(truth[resource]);
        expect(served.length).toBe(truth[resource].length + truth.malformed[resource].length);
      }
    });
  });

  it('breaks the same items every time and none when the rate is 0', async () => {
    await withSimulator({ malformedRate: 0.3 }, async (simulator) => {
      const first = (await getArray(simulator, '/v1/feedback')).filter(
        (item) => !feedbackSchema.safeParse(item).success,
      );
      const again = (await getArray(simulator, '/v1/feedback')).filter(
        (item) => !feedbackSchema.safeParse(item).success,
      );
      expect(again).toEqual(first);
      simulator.setOptions({ malformedRate: 0 });
      const clean = await getArray(simulator, '/v1/feedback');
      expect(clean.every((item) => feedbackSchema.safeParse(item).success)).toBe(true);
      expect(simulator.truth().malformed.feedback).toEqual([]);
      expect(clean.map(keyOf)).toEqual(
        expect.arrayContaining(first.filter((item) => 'id' in item).map(keyOf)),
      );
    });
  });
});
