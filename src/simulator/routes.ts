import type { FastifyInstance } from 'fastify';
import { WINDOWED_RESOURCES } from '../schemas/resources.js';
import { TEST_KINDS } from '../schemas/test.js';
import type { Dataset } from './dataset.js';
import type { Handler } from './guard.js';
import { type ItemView, presentWindowed, withExtras } from './presentation.js';
import type { ServingSettings } from './settings.js';
import { parseWindowQuery, selectWindow } from './window-query.js';

export interface RouteDeps {
  dataset: Dataset;
  settings: ServingSettings;
  guarded: (handler: Handler) => Handler;
}

const TEST_LABELS = { abtesting: 'A/B test', personalization: 'personalization test' } as const;

/** The eight GET endpoints of spec section 4; every one answers a JSON array. */
export function registerRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { dataset, settings, guarded } = deps;
  const view = (): ItemView => ({ extraFields: settings.extraFields, malformedRate: settings.malformedRate });

  for (const kind of TEST_KINDS) {
    app.get(
      `/v1/${kind}`,
      guarded(async () => dataset.tests(kind).map((test) => withExtras(test, view()))),
    );
    app.get(
      `/v1/${kind}/detail/:id`,
      guarded(async (request, reply) => {
        const { id } = request.params as { id: string };
        const results = dataset.results(kind, id);
        if (!results) {
          return reply
            .code(404)
            .send({ error: 'not_found', message: `no ${TEST_LABELS[kind]} with id ${id}` });
        }
        return results.map((result) => withExtras(result, view()));
      }),
    );
  }

  app.get(
    '/v1/heatmaps',
    guarded(async () => dataset.heatmaps().map((heatmap) => withExtras(heatmap, view()))),
  );

  for (const resource of WINDOWED_RESOURCES) {
    app.get(
      `/v1/${resource}`,
      guarded(async (request, reply) => {
        const parsed = parseWindowQuery(request.query);
        if (!parsed.ok) return reply.code(400).send({ error: 'bad_request', message: parsed.message });
        const current = view();
        return selectWindow(dataset, resource, parsed.query, settings).map(
          (item) => presentWindowed(dataset.seed, resource, item, current).item,
        );
      }),
    );
  }
}
