import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { errorMessage } from '../errors.js';
import type { AdvanceOptions, AdvanceReport } from './advance.js';
import { generateDataset } from './dataset.js';
import type { Volume } from './day-plan.js';
import { createFaultPicker, type FaultKind } from './faults.js';
import { createGuard } from './guard.js';
import { registerRoutes } from './routes.js';
import { DEFAULT_SETTINGS, pickSettings, type ServingSettings, validateSettings } from './settings.js';
import { createStatsTracker, type SimulatorStats } from './stats.js';
import type { GroundTruth } from './truth.js';
import { sendWebhooks, type WebhookSendOptions, type WebhookSendResult } from './webhook-sender.js';

export type { AdvanceOptions, AdvanceReport } from './advance.js';
export { type Dataset, type DatasetOptions, generateDataset } from './dataset.js';
export type { FaultKind } from './faults.js';
export type { SimulatorStats } from './stats.js';
export type { DatasetMeta, GroundTruth } from './truth.js';

/** A fake Website Insights service (spec sections 2-6) for tests, demos and benchmarks. */
export interface SimulatorOptions {
  /** Default 1. */
  seed?: number;
  /** First day with data, `YYYY-MM-DD` (UTC). */
  from: string;
  /** Last day with data, included. */
  to: string;
  /** Default 'sim-key'. */
  apiKey?: string;
  /** Whether enddate's own day is served; default 'inclusive'. */
  enddate?: 'inclusive' | 'exclusive';
  /** Default 'oldest-first'. */
  order?: 'oldest-first' | 'newest-first';
  /** Most items per response; a larger or missing limit silently gets at most this. Default 1000. */
  cap?: number;
  /** Added before every response. Default 0. */
  latencyMs?: number;
  /** Share (0..1) of requests that fail after passing auth. Default 0. */
  faultRate?: number;
  /** Kinds drawn from when a fault fires. Default all. */
  faults?: FaultKind[];
  /** Form of Retry-After on 429: "1" or an HTTP-date. Default 'seconds'. */
  retryAfter?: 'seconds' | 'http-date';
  /** How long a stall hangs before answering. Default 60000. */
  stallMs?: number;
  /** Share (0..1) of windowed items served with a wrong type or a missing field. Default 0. */
  malformedRate?: number;
  /** Add fields the spec does not name (`x_extra`, `x_score`) to every item. Default false. */
  extraFields?: boolean;
  /** Mean items per day (defaults 8, 6, 5) and the busy day's feedback (default 1500). */
  volume?: Partial<Volume>;
  /** Default 0: a free port. */
  port?: number;
  /** Default '127.0.0.1'. */
  host?: string;
}

export type SimulatorPatch = Partial<
  Pick<
    SimulatorOptions,
    | 'enddate'
    | 'order'
    | 'cap'
    | 'latencyMs'
    | 'faultRate'
    | 'faults'
    | 'retryAfter'
    | 'stallMs'
    | 'malformedRate'
    | 'extraFields'
  >
>;

export interface Simulator {
  /** Base URL without a trailing slash, e.g. http://127.0.0.1:43123 */
  url: string;
  apiKey: string;
  /** Everything it would serve now, ignoring cap and faults; malformed items listed apart. */
  truth(): GroundTruth;
  /** Late items on the last days, edits, one A/B test removed, results grown. */
  advance(options?: AdvanceOptions): AdvanceReport;
  setOptions(patch: SimulatorPatch): void;
  stats(): SimulatorStats;
  resetStats(): void;
  /** POSTs a spec-6 webhook body for each valid feedback item and survey answer. */
  sendWebhooks(targetUrl: string, options?: WebhookSendOptions): Promise<WebhookSendResult>;
  /** Stops listening; requests still waiting (latency, stalls) are cut off at once. */
  stop(): Promise<void>;
}

export async function startSimulator(options: SimulatorOptions): Promise<Simulator> {
  const settings: ServingSettings = { ...DEFAULT_SETTINGS, ...pickSettings(options) };
  validateSettings(settings);
  // Our own copy, so a caller changing its array later does not change what is served.
  settings.faults = [...settings.faults];
  const dataset = generateDataset({
    seed: options.seed,
    from: options.from,
    to: options.to,
    volume: options.volume,
  });
  const stats = createStatsTracker();
  const stopping = new AbortController();
  // forceCloseConnections: keep-alive sockets must not hold stop() up.
  const app = Fastify({ logger: false, forceCloseConnections: true });

  app.addHook('onRequest', (request, reply, done) => {
    reply.raw.once('close', stats.start(request.url.split('?')[0] ?? request.url));
    done();
  });
  const guarded = createGuard({
    settings,
    stats,
    pickFault: createFaultPicker(dataset.seed),
    stopping: stopping.signal,
  });
  registerRoutes(app, { dataset, settings, guarded });
  app.setNotFoundHandler(
    guarded(async (request, reply) =>
      reply
        .code(404)
        .send({ error: 'not_found', message: `no route ${request.method} ${request.url.split('?')[0]}` }),
    ),
  );
  app.setErrorHandler((error: unknown, _request, reply) => {
    const code =
      typeof error === 'object' && error !== null && 'statusCode' in error ? error.statusCode : undefined;
    const status = typeof code === 'number' && code >= 400 && code < 600 ? code : 500;
    return reply
      .code(status)
      .send({ error: status < 500 ? 'bad_request' : 'internal_error', message: errorMessage(error) });
  });

  const host = options.host ?? '127.0.0.1';
  await app.listen({ port: options.port ?? 0, host });
  const { port } = app.server.address() as AddressInfo;
  let stopped: Promise<void> | undefined;
  const view = () => ({ extraFields: settings.extraFields, malformedRate: settings.malformedRate });

  return {
    url: `http://${urlHost(host)}:${port}`,
    apiKey: settings.apiKey,
    truth: () => dataset.truth(view()),
    advance: (advanceOptions) => dataset.advance(advanceOptions),
    setOptions(patch) {
      const { apiKey: _ignored, ...picked } = pickSettings(patch);
      validateSettings(picked);
      Object.assign(settings, picked, picked.faults ? { faults: [...picked.faults] } : {});
    },
    stats: () => stats.snapshot(),
    resetStats: () => stats.reset(),
    sendWebhooks: (targetUrl, sendOptions) => sendWebhooks(dataset.truth(view()), targetUrl, sendOptions),
    stop() {
      stopped ??= (async () => {
        stopping.abort();
        await app.close();
      })();
      return stopped;
    },
  };
}

/** The host a client should dial: a wildcard listen address is reached through loopback. */
function urlHost(host: string): string {
  if (host === '0.0.0.0') return '127.0.0.1';
  if (host === '::') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
}
