import { describe, expect, it } from 'vitest';
import { feedbackSchema } from '../../src/schemas/feedback.js';
import { heatmapSchema } from '../../src/schemas/heatmap.js';
import { recordingSchema } from '../../src/schemas/recording.js';
import { surveyAnswerSchema } from '../../src/schemas/survey-answer.js';
import { testResultSchema, testSchema } from '../../src/schemas/test.js';
import { expectAllValid, get, getArray, SHORT_RANGE, withSimulator } from './sim-helpers.js';

const ALL_PATHS = [
  '/v1/abtesting',
  '/v1/personalization',
  '/v1/feedback',
  '/v1/survey',
  '/v1/recordings',
  '/v1/heatmaps',
] as const;

describe('simulator endpoints (spec section 4)', () => {
  it('serves every list endpoint as a JSON array that matches the spec schemas and the ground truth', async () => {
    await withSimulator({}, async (simulator) => {
      const truth = simulator.truth();
      const abTests = await getArray(simulator, '/v1/abtesting');
      const personalization = await getArray(simulator, '/v1/personalization');
      const feedback = await getArray(simulator, '/v1/feedback');
      const survey = await getArray(simulator, '/v1/survey');
      const recordings = await getArray(simulator, '/v1/recordings');
      const heatmaps = await getArray(simulator, '/v1/heatmaps');

      expectAllValid(testSchema, [...abTests, ...personalization]);
      expectAllValid(feedbackSchema, feedback);
      expectAllValid(surveyAnswerSchema, survey);
      expectAllValid(recordingSchema, recordings);
      expectAllValid(heatmapSchema, heatmaps);
      expect(abTests).toEqual(truth.abTests);
      expect(personalization).toEqual(truth.personalizationTests);
      expect(feedback).toEqual(truth.feedback);
      expect(survey).toEqual(truth.survey);
      expect(recordings).toEqual(truth.recordings);
      expect(heatmaps).toEqual(truth.heatmaps);
      expect(feedback.length).toBeGreaterThan(0);
    });
  });

  it('answers with Content-Type application/json', async () => {
    await withSimulator({}, async (simulator) => {
      for (const path of ALL_PATHS) {
        const { headers } = await get(simulator, path);
        expect(headers.get('content-type')).toMatch(/^application\/json/);
      }
    });
  });

  it('serves the per-variant results of every test on its detail endpoint', async () => {
    await withSimulator({}, async (simulator) => {
      const truth = simulator.truth();
      for (const kind of ['abtesting', 'personalization'] as const) {
        const tests = kind === 'abtesting' ? truth.abTests : truth.personalizationTests;
        for (const test of tests) {
          const results = await getArray(simulator, `/v1/${kind}/detail/${test.id}`);
          expectAllValid(testResultSchema, results);
          expect(results).toEqual(truth.results[kind][test.id]);
          expect(results.map((result) => result.variant)).toContain('control');
        }
      }
    });
  });

  it('answers 404 with a JSON error body for an unknown test id or path', async () => {
    await withSimulator({}, async (simulator) => {
      for (const path of ['/v1/abtesting/detail/nope', '/v1/personalization/detail/nope', '/v1/nothing']) {
        const { status, body } = await get(simulator, path);
        expect(status).toBe(404);
        expect(body).toMatchObject({ error: 'not_found', message: expect.any(String) });
      }
    });
  });

  it('serves recordings with string ids and heatmaps with and without end_time', async () => {
    await withSimulator({}, async (simulator) => {
      const recordings = await getArray(simulator, '/v1/recordings');
      for (const recording of recordings) expect(typeof recording.id).toBe('string');
      const heatmaps = await getArray(simulator, '/v1/heatmaps');
      expect(heatmaps.some((heatmap) => heatmap.end_time === null)).toBe(true);
      expect(heatmaps.some((heatmap) => typeof heatmap.end_time === 'string')).toBe(true);
    });
  });
});

describe('authentication (spec section 5: the raw key in Authorization)', () => {
  it('answers 401 with a JSON body to a missing key, a wrong key and a "Bearer" key, on every path', async () => {
    await withSimulator({}, async (simulator) => {
      for (const path of [...ALL_PATHS, '/v1/abtesting/detail/x']) {
        const missing = await fetch(`${simulator.url}${path}`);
        expect(missing.status).toBe(401);
        expect(await missing.json()).toMatchObject({ error: 'unauthorized', message: expect.any(String) });
      }
      for (const authorization of ['wrong', `Bearer ${simulator.apiKey}`, '']) {
        const { status } = await get(simulator, '/v1/feedback', { headers: { authorization } });
        expect(status).toBe(401);
      }
    });
  });

  it('uses the apiKey option, default "sim-key"', async () => {
    await withSimulator({}, async (simulator) => expect(simulator.apiKey).toBe('sim-key'));
    await withSimulator({ apiKey: 'k-123' }, async (simulator) => {
      expect(simulator.apiKey).toBe('k-123');
      expect((await get(simulator, '/v1/heatmaps', { headers: { authorization: 'k-123' } })).status).toBe(
        200,
      );
      expect((await get(simulator, '/v1/heatmaps', { headers: { authorization: 'sim-key' } })).status).toBe(
        401,
      );
    });
  });
});

describe('query validation of the windowed endpoints', () => {
  it.each([
    ['startdate=2024-3-01', /startdate/],
    ['enddate=2024-13-01', /enddate/],
    ['startdate=yesterday', /startdate/],
    ['limit=abc', /limit/],
    ['limit=0', /limit/],
    ['limit=-1', /limit/],
    ['limit=1.5', /limit/],
    ['startdate=2024-03-01&startdate=2024-03-02', /startdate/],
  ])('answers 400 with a JSON error to %s', async (query, message) => {
    await withSimulator({}, async (simulator) => {
      for (const resource of ['feedback', 'survey', 'recordings']) {
        const { status, body } = await get(simulator, `/v1/${resource}?${query}`);
        expect(status).toBe(400);
        expect(body).toMatchObject({ error: 'bad_request', message: expect.stringMatching(message) });
      }
    });
  });
});

describe('extraFields option', () => {
  it('adds fields the spec does not name to every item, and the ground truth has them too', async () => {
    await withSimulator({ extraFields: true }, async (simulator) => {
      const truth = simulator.truth();
      for (const path of ALL_PATHS) {
        const items = await getArray(simulator, path);
        expect(items.length).toBeGreaterThan(0);
        for (const item of items) expect(item).toHaveProperty('x_extra');
      }
      const feedback = await getArray(simulator, '/v1/feedback');
      expectAllValid(feedbackSchema, feedback);
      expect(feedback).toEqual(truth.feedback);
      expect(truth.feedback[0]).toHaveProperty('x_extra');
      const id = truth.abTests[0]?.id;
      expect((await getArray(simulator, `/v1/abtesting/detail/${id}`))[0]).toHaveProperty('x_extra');
    });
  });

  it('can be switched at run time with setOptions', async () => {
    await withSimulator({}, async (simulator) => {
      expect((await getArray(simulator, '/v1/heatmaps'))[0]).not.toHaveProperty('x_extra');
      simulator.setOptions({ extraFields: true });
      expect((await getArray(simulator, '/v1/heatmaps'))[0]).toHaveProperty('x_extra');
    });
  });
});

describe('determinism over HTTP', () => {
  async function serveAll(seed: number): Promise<unknown[]> {
    return withSimulator({ seed, ...SHORT_RANGE }, async (simulator) => {
      const bodies: unknown[] = [];
      for (const path of ALL_PATHS) bodies.push(await getArray(simulator, path));
      const first = simulator.truth().abTests[0]?.id;
      bodies.push(await getArray(simulator, `/v1/abtesting/detail/${first}`));
      return bodies;
    });
  }

  it('serves identical data from two simulators with the same seed, and other data with another seed', async () => {
    const [a, b, c] = await Promise.all([serveAll(7), serveAll(7), serveAll(8)]);
    expect(a).toEqual(b);
    expect(c).not.toEqual(a);
  });

  it('serves the same items whatever the order of requests', async () => {
    await withSimulator({}, async (simulator) => {
      const day5First = await getArray(simulator, '/v1/feedback?startdate=2024-03-05&enddate=2024-03-05');
      const all = await getArray(simulator, '/v1/feedback');
      const day5Again = await getArray(simulator, '/v1/feedback?startdate=2024-03-05&enddate=2024-03-05');
      expect(day5Again).toEqual(day5First);
      expect(all.filter((item) => String(item.dt).startsWith('2024-03-05'))).toEqual(day5First);
    });
  });

  it('rejects invalid options when starting and when changed', async () => {
    await expect(withSimulator({ cap: 0 }, async () => undefined)).rejects.toThrow(/cap/);
    await expect(withSimulator({ faultRate: 2 }, async () => undefined)).rejects.toThrow(/faultRate/);
    await withSimulator({}, async (simulator) => {
      expect(() => simulator.setOptions({ order: 'sideways' as 'oldest-first' })).toThrow(/order/);
      expect(() => simulator.setOptions({ faults: ['teapot' as '500'] })).toThrow(/faults/);
    });
  });
});
