import { describe, expect, it } from 'vitest';
import { feedbackSchema } from '../../src/schemas/feedback.js';
import { heatmapSchema } from '../../src/schemas/heatmap.js';
import { recordingSchema } from '../../src/schemas/recording.js';
import { surveyAnswerSchema } from '../../src/schemas/survey-answer.js';
import { testResultSchema } from '../../src/schemas/test.js';
import { ENDPOINT_NAMES, type EndpointName, type Simulator } from '../../src/simulator/server.js';
import { expectAllValid, get, getArray, keyOf, withSimulator } from './sim-helpers.js';

// Dirty but deterministic servers (odd values, refused endpoints, transient empty
// answers, broken variants), with the ground truth saying what a correct client keeps.

const OVERFLOW = 2_147_483_648;

/** A path for each endpoint name; detail paths use the first listed test. */
function pathOf(simulator: Simulator, endpoint: EndpointName): string {
  const truth = simulator.truth();
  if (endpoint === 'abtesting/detail') return `/v1/abtesting/detail/${truth.abTests[0]?.id}`;
  if (endpoint === 'personalization/detail') {
    return `/v1/personalization/detail/${truth.personalizationTests[0]?.id}`;
  }
  return `/v1/${endpoint}`;
}

describe('oddValueRate: valid JSON values a careless client cannot store', () => {
  it('serves odd items as listed in truth.odd, and lists them among the valid items too', async () => {
    await withSimulator({ oddValueRate: 0.3 }, async (simulator) => {
      const truth = simulator.truth();
      const served = {
        feedback: await getArray(simulator, '/v1/feedback'),
        survey: await getArray(simulator, '/v1/survey'),
        recordings: await getArray(simulator, '/v1/recordings'),
      };
      expectAllValid(feedbackSchema, served.feedback);
      expectAllValid(surveyAnswerSchema, served.survey);
      expectAllValid(recordingSchema, served.recordings);
      for (const resource of ['feedback', 'survey', 'recordings'] as const) {
        expect(served[resource]).toEqual(truth[resource]);
        const odd = truth.odd[resource];
        expect(odd.length).toBeGreaterThan(0);
        expect(odd.length).toBeLessThan(served[resource].length);
        const oddKeys = new Set(odd.map((entry) => entry.key));
        for (const item of served[resource]) {
          const entry = odd.find((candidate) => candidate.key === keyOf(item) && candidate.dt === item.dt);
          const value = entry ? item[entry.field] : undefined;
          if (entry?.kind === 'int-overflow') expect(value).toBe(OVERFLOW);
          else if (entry?.kind === 'nul') expect(String(value)).toContain('\u0000');
          else {
            expect(oddKeys.has(keyOf(item))).toBe(false);
            expect(JSON.stringify(item)).not.toContain('\\u0000');
            expect(Object.values(item)).not.toContain(OVERFLOW);
          }
        }
      }
      expect(new Set(truth.odd.feedback.map((entry) => entry.kind))).toEqual(
        new Set(['int-overflow', 'nul']),
      );
      expect(truth.odd.survey.every((entry) => entry.kind === 'nul' && entry.field === 'comment')).toBe(true);
    });
  });

  it('gives heatmaps a heatmap_limit above int4, listed by id', async () => {
    await withSimulator({ oddValueRate: 1 }, async (simulator) => {
      const truth = simulator.truth();
      const heatmaps = await getArray(simulator, '/v1/heatmaps');
      expectAllValid(heatmapSchema, heatmaps);
      expect(heatmaps).toEqual(truth.heatmaps);
      for (const heatmap of heatmaps) expect(heatmap.heatmap_limit).toBe(OVERFLOW);
      expect(truth.odd.heatmaps).toEqual(
        heatmaps.map((heatmap) => ({ key: heatmap.id, kind: 'int-overflow', field: 'heatmap_limit' })),
      );
    });
  });

  it('never puts an odd value on a malformed item, and is the same for the same seed', async () => {
    await withSimulator({ oddValueRate: 0.5, malformedRate: 0.3 }, async (simulator) => {
      const truth = simulator.truth();
      const malformedKeys = new Set(
        truth.malformed.feedback.map((item) => keyOf(item as Record<string, unknown>)),
      );
      for (const entry of truth.odd.feedback) expect(malformedKeys.has(entry.key)).toBe(false);
      await withSimulator({ oddValueRate: 0.5, malformedRate: 0.3 }, async (twin) => {
        expect(twin.truth().odd).toEqual(truth.odd);
      });
    });
  });
});

describe('forbidden and missing endpoints', () => {
  it('answers 403 or 404 on the named endpoints once the key passes; 401 for a bad key everywhere', async () => {
    const forbidden: EndpointName[] = ['feedback', 'abtesting/detail'];
    const missing: EndpointName[] = ['heatmaps', 'personalization'];
    await withSimulator({ forbidden, missing }, async (simulator) => {
      for (const endpoint of ENDPOINT_NAMES) {
        const path = pathOf(simulator, endpoint);
        const { status, body } = await get(simulator, path);
        if (forbidden.includes(endpoint)) {
          expect(status, path).toBe(403);
          expect(body).toMatchObject({ error: 'forbidden' });
        } else if (missing.includes(endpoint)) {
          expect(status, path).toBe(404);
          expect(body).toMatchObject({ error: 'not_found' });
        } else {
          expect(status, path).toBe(200);
        }
        expect((await get(simulator, path, { headers: { authorization: 'wrong' } })).status).toBe(401);
      }
      simulator.setOptions({ forbidden: [], missing: ['survey'] });
      expect((await get(simulator, '/v1/feedback')).status).toBe(200);
      expect((await get(simulator, '/v1/survey')).status).toBe(404);
    });
  });
});

describe('emptyAnswers: transient 200 []', () => {
  it('empties the next N answers of an endpoint, then serves normally; detail requests count too', async () => {
    await withSimulator({ emptyAnswers: { feedback: 2, 'abtesting/detail': 1 } }, async (simulator) => {
      const truth = simulator.truth();
      const detail = pathOf(simulator, 'abtesting/detail');
      expect(await getArray(simulator, '/v1/survey')).toEqual(truth.survey);
      expect(await getArray(simulator, '/v1/feedback')).toEqual([]);
      // A refused request (400) is no answer to empty, so it does not count.
      expect((await get(simulator, '/v1/feedback?limit=0')).status).toBe(400);
      expect(await getArray(simulator, '/v1/feedback?startdate=2024-03-01&enddate=2024-03-01')).toEqual([]);
      expect(await getArray(simulator, '/v1/feedback')).toEqual(truth.feedback);
      expect(await getArray(simulator, detail)).toEqual([]);
      expect(await getArray(simulator, detail)).toEqual(truth.results.abtesting[truth.abTests[0]?.id ?? '']);
      simulator.setOptions({ emptyAnswers: { feedback: 1, heatmaps: 1 } });
      expect(await getArray(simulator, '/v1/heatmaps')).toEqual([]);
      expect(await getArray(simulator, '/v1/feedback')).toEqual([]);
      expect(await getArray(simulator, '/v1/feedback')).toEqual(truth.feedback);
      expect(await getArray(simulator, '/v1/heatmaps')).toEqual(truth.heatmaps);
    });
  });

  it('does not change the caller’s object when counting down', async () => {
    const emptyAnswers = { survey: 1 };
    await withSimulator({ emptyAnswers }, async (simulator) => {
      expect(await getArray(simulator, '/v1/survey')).toEqual([]);
      expect(emptyAnswers).toEqual({ survey: 1 });
    });
  });
});

describe('snapshotEmptyRate: a share of snapshot answers played as transient 200 []', () => {
  const SNAPSHOT_ENDPOINTS: EndpointName[] = [
    'abtesting',
    'abtesting/detail',
    'personalization',
    'personalization/detail',
    'heatmaps',
  ];

  it('empties answers on every snapshot endpoint, never a windowed one, and counts them', async () => {
    await withSimulator({ snapshotEmptyRate: 0.5 }, async (simulator) => {
      const truth = simulator.truth();
      for (const endpoint of SNAPSHOT_ENDPOINTS) {
        const answers: unknown[][] = [];
        for (let i = 0; i < 12; i++) answers.push(await getArray(simulator, pathOf(simulator, endpoint)));
        // Some empty, some whole: never a cut answer.
        expect(answers.some((a) => a.length === 0)).toBe(true);
        expect(
          answers
            .filter((a) => a.length > 0)
            .every((a) => a.length === answers.find((b) => b.length > 0)?.length),
        ).toBe(true);
      }
      for (let i = 0; i < 12; i++) expect(await getArray(simulator, '/v1/feedback')).toEqual(truth.feedback);
      expect(simulator.stats().emptiesServed).toBeGreaterThan(0);
    });
  });

  it('empties the same answers of a path whatever order the paths are asked in', async () => {
    const paths = (simulator: Simulator) => SNAPSHOT_ENDPOINTS.map((e) => pathOf(simulator, e));
    const pattern = async (simulator: Simulator, order: string[]) => {
      const seen = new Map<string, boolean[]>();
      for (let round = 0; round < 6; round++) {
        for (const path of order) {
          const empty = (await getArray(simulator, path)).length === 0;
          seen.set(path, [...(seen.get(path) ?? []), empty]);
        }
      }
      return Object.fromEntries([...seen].sort(([a], [b]) => a.localeCompare(b)));
    };
    const forward = await withSimulator({ snapshotEmptyRate: 0.3 }, (s) => pattern(s, paths(s)));
    const backward = await withSimulator({ snapshotEmptyRate: 0.3 }, (s) => pattern(s, paths(s).reverse()));
    expect(backward).toEqual(forward);
  });
});

describe('malformedVariants', () => {
  it("serves each test's first non-control variant with complete as a string, listed apart in truth", async () => {
    await withSimulator({ malformedVariants: true }, async (simulator) => {
      const truth = simulator.truth();
      const tests = [
        ...truth.abTests.map((test) => ['abtesting', test.id] as const),
        ...truth.personalizationTests.map((test) => ['personalization', test.id] as const),
      ];
      expect(truth.malformedVariants).toHaveLength(tests.length);
      for (const [kind, testId] of tests) {
        const served = await getArray(simulator, `/v1/${kind}/detail/${testId}`);
        const broken = served.filter((result) => !testResultSchema.safeParse(result).success);
        expect(broken).toHaveLength(1);
        expect(typeof broken[0]?.complete).toBe('string');
        expect(broken[0]?.variant).not.toBe('control');
        expect(truth.malformedVariants).toContainEqual({ kind, testId, variant: broken[0]?.variant });
        expect(served.filter((result) => result !== broken[0])).toEqual(truth.results[kind][testId]);
      }
    });
  });
});
