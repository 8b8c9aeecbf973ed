import type { FastifyInstance } from 'fastify';
import { SNAPSHOT_RESOURCES, type SnapshotResource, WINDOWED_RESOURCES } from '../schemas/resources.js';
import type { TestKind } from '../schemas/test.js';
import type { Dataset } from './dataset.js';
import type { EndpointName } from './endpoint-names.js';
import type { Handler } from './guard.js';
import { presentHeatmap, presentWindowed, withExtras } from './presentation.js';
import { createRandom, hashSeed } from './random.js';
import { type ServingSettings, viewOf } from './settings.js';
import { presentResults } from './variant-presentation.js';
import { parseWindowQuery, selectWindow, type WindowSource } from './window-query.js';

export interface RouteDeps {
  dataset: Dataset;
  /** The windowed items as served (ids reused or not). */
  windows: WindowSource;
  settings: ServingSettings;
  guarded: (handler: Handler, endpoint?: EndpointName) => Handler;
}

const TEST_LABELS = { abtesting: 'A/B test', personalization: 'personalization test' } as const;

/** The routes of each snapshot resource (src/schemas/resource-names.ts): a new one is a compile error here. */
const SNAPSHOT_ROUTES = {
  abtesting: (app, deps) => testRoutes(app, deps, 'abtesting'),
  personalization: (app, deps) => testRoutes(app, deps, 'personalization'),
  heatmaps: (app, { dataset, settings, guarded }) =>
    app.get(
      '/v1/heatmaps',
      guarded(
        async () =>
          dataset.heatmaps().map((heatmap) => presentHeatmap(dataset.seed, heatmap, viewOf(settings)).item),
        'heatmaps',
      ),
    ),
} satisfies Record<SnapshotResource, (app: FastifyInstance, deps: RouteDeps) => void>;

function testRoutes(app: FastifyInstance, { dataset, settings, guarded }: RouteDeps, kind: TestKind): void {
  app.get(
    `/v1/${kind}`,
    guarded(async () => dataset.tests(kind).map((test) => withExtras(test, viewOf(settings))), kind),
  );
  app.get(
    `/v1/${kind}/detail/:id`,
    guarded(async (request, reply) => {
      const { id } = request.params as { id: string };
      const results = dataset.results(kind, id);
      if (!results) {
        return reply.code(404).send({ error: 'not_found', message: `no ${TEST_LABELS[kind]} with id ${id}` });
      }
      return presentResults(results, viewOf(settings)).map((served) => served.item);
    }, `${kind}/detail`),
  );
}

/** The eight GET endpoints of spec section 4; every one answers a JSON array. */
export function registerRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { dataset, windows, settings, guarded } = deps;
  // Numbers the windowed requests, so order 'random' shuffles each one differently yet replayably.
  let windowRequests = 0;

  for (const resource of SNAPSHOT_RESOURCES) SNAPSHOT_ROUTES[resource](app, deps);

  for (const resource of WINDOWED_RESOURCES) {
    app.get(
      `/v1/${resource}`,
      guarded(async (request, reply) => {
        const parsed = parseWindowQuery(request.query, settings.instants);
        if (!parsed.ok) return reply.code(400).send({ error: 'bad_request', message: parsed.message });
        const { limit } = parsed.query;
        if (settings.maxLimit !== null && limit !== undefined && limit > settings.maxLimit) {
          return reply
            .code(400)
            .send({ error: 'bad_request', message: `limit must be at most ${settings.maxLimit}` });
        }
        windowRequests += 1;
        const shuffle = createRandom(hashSeed(dataset.seed, 'order', windowRequests));
        const view = viewOf(settings);
        return selectWindow(windows, resource, parsed.query, settings, shuffle).map(
          (item) => presentWindowed(dataset.seed, resource, item, view).item,
        );
      }, resource),
    );
  }
}
