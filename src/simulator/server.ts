import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { errorMessage } from '../errors.js';
import type { WindowedResource } from '../schemas/resources.js';
import type { TestKind, TestResult } from '../schemas/test.js';
import type { AdvanceOptions, AdvanceReport } from './advance.js';
import { generateDataset, type HeatmapEdit, type MovedItem, type TestEdit } from './dataset.js';
import type { Volume } from './day-plan.js';
import type { EndpointName } from './endpoint-names.js';
import { createFaultPicker, type FaultKind } from './faults.js';
import { createGuard } from './guard.js';
import { createServedDays } from './id-reuse.js';
import { registerRoutes } from './routes.js';
import {
  capOf,
  DEFAULT_SETTINGS,
  ownCopies,
  pickSettings,
  type ServingSettings,
  viewOf,
} from './settings.js';
import { validateSettings } from './settings-validation.js';
import { createStatsTracker, type SimulatorStats } from './stats.js';
import { createEmptyPicker } from './transient-empties.js';
import { assembleTruth, type GroundTruth } from './truth.js';
import { sendWebhooks, type WebhookSendOptions, type WebhookSendResult } from './webhook-sender.js';

export type { AdvanceOptions, AdvanceReport } from './advance.js';
export {
  type Dataset,
  type DatasetOptions,
  generateDataset,
  type HeatmapEdit,
  type MovedItem,
  type TestEdit,
} from './dataset.js';
export type { EndpointName } from './endpoint-names.js';
export { ENDPOINT_NAMES } from './endpoint-names.js';
export type { FaultKind } from './faults.js';
export type { OddKind } from './odd-values.js';
export type { SimulatorStats } from './stats.js';
export type { DatasetMeta, GroundTruth, OddItem, TruthMeta } from './truth.js';
export { type DayCalendar, daysAboveCap, itemsPerDay } from './truth-days.js';

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
  /**
   * More keys accepted, each serving the same data: several sources on one simulator. stats().byKey
   * counts each key's requests and the most it had in flight at once. Default [].
   */
  apiKeys?: string[];
  /** When not empty, faults (faultRate, faults) fire only on requests with one of these keys. Default []. */
  faultKeys?: string[];
  /** Whether startdate's own (server) day is served; default 'inclusive'. An empty range answers 200 []. */
  startdate?: 'inclusive' | 'exclusive';
  /** Whether enddate's own (server) day is served; default 'inclusive'. */
  enddate?: 'inclusive' | 'exclusive';
  /**
   * What an ISO instant (`YYYY-MM-DDThh:mm:ss.sssZ`) in startdate or enddate does. 'refused'
   * (default): 400, as for any value that is not a day. 'ignored': the time is dropped and the
   * date read as a day. 'honoured': items are filtered by the instant itself, startdate and
   * enddate keeping their inclusivity at it (inclusive: dt >= startdate; exclusive: dt > startdate).
   */
  instants?: 'refused' | 'ignored' | 'honoured';
  /**
   * Items a windowed request without a limit gets (the real service documents 50), under the cap.
   * Default null: the cap.
   */
  defaultLimit?: number | null;
  /**
   * Default 'oldest-first'. 'random': a fresh shuffle on every request (from the seed and a
   * per-server request counter). The cap and limit cut comes after ordering.
   */
  order?: 'oldest-first' | 'newest-first' | 'random';
  /** Most items per response; a larger or missing limit silently gets at most this. Default 1000. */
  cap?: number;
  /** Per-resource silent caps, overriding `cap` for that resource. Default {}. */
  caps?: Partial<Record<WindowedResource, number>>;
  /**
   * A windowed request whose limit is above this answers 400
   * `{"error":"bad_request","message":"limit must be at most N"}`. Default null: no maximum.
   */
  maxLimit?: number | null;
  /**
   * The server filters by its own day: day S covers [S 00:00Z - offset, S+1 00:00Z - offset), so
   * -300 (UTC-5) makes day S run from S 05:00Z to S+1 05:00Z. Items keep their UTC dt; data still
   * exists only on the UTC days from..to. Integer, -840..720; default 0.
   */
  dayOffsetMinutes?: number;
  /**
   * The server filters by the days of this time zone (IANA name) instead, daylight saving
   * included: Europe/Berlin's day of 2026-03-29 lasts 23 hours, of 2026-10-25 25 hours. Not with
   * a dayOffsetMinutes. Default null.
   */
  dayZone?: string | null;
  /**
   * Share (0..1) of days (drawn from seed and day) whose windowed items take the keys of the
   * previous day's items by position, so keys collide across days. Default 0.
   */
  reuseIds?: number;
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
  /**
   * Share (0..1) of windowed items and heatmaps served with one odd value that is still valid by
   * the spec's types: 2147483648 in feedback.rating, recordings.duration or heatmap_limit, or a NUL
   * character inside feedback.comment, survey.comment or recordings.city. Listed in truth().odd.
   * Default 0.
   */
  oddValueRate?: number;
  /** In each test's detail, the first non-control variant has `complete` as a string. Default false. */
  malformedVariants?: boolean;
  /** Add fields the spec does not name (`x_extra`, `x_score`) to every item. Default false. */
  extraFields?: boolean;
  /** Endpoints answering 403 `{"error":"forbidden"}` once the key is accepted (before faults). Default []. */
  forbidden?: EndpointName[];
  /** Endpoints answering 404 `{"error":"not_found"}` once the key is accepted; forbidden wins. Default []. */
  missing?: EndpointName[];
  /**
   * The next N answers of an endpoint that would be 200 are `200 []` instead (a transient empty
   * answer): the count goes down by one per such request, detail requests included; requests
   * answered 4xx or with a fault do not count. setOptions sets the counts anew (endpoints left out
   * go back to 0). Default {}.
   */
  emptyAnswers?: Partial<Record<EndpointName, number>>;
  /**
   * Share (0..1) of snapshot answers (test lists, test details, heatmaps) that would be 200 and are
   * `200 []` instead, as a flaky service might answer. Drawn per request path from the seed and that
   * path's request count, so the same answers are empty however concurrent requests interleave;
   * stats().emptiesServed counts them (emptyAnswers included). Default 0.
   */
  snapshotEmptyRate?: number;
  /** Mean items per day (defaults 8, 6, 5) and the busy day's feedback (default 1500). */
  volume?: Partial<Volume>;
  /** Default 0: a free port. */
  port?: number;
  /** Default '127.0.0.1'. */
  host?: string;
}

/** What a running simulator can change; `apiKeys` too, as a key revoked (or issued) while in use. */
export type SimulatorPatch = Partial<
  Pick<
    SimulatorOptions,
    | 'apiKeys'
    | 'startdate'
    | 'enddate'
    | 'instants'
    | 'defaultLimit'
    | 'order'
    | 'cap'
    | 'caps'
    | 'maxLimit'
    | 'dayOffsetMinutes'
    | 'dayZone'
    | 'reuseIds'
    | 'latencyMs'
    | 'faultRate'
    | 'faults'
    | 'retryAfter'
    | 'stallMs'
    | 'malformedRate'
    | 'oddValueRate'
    | 'malformedVariants'
    | 'extraFields'
    | 'forbidden'
    | 'missing'
    | 'emptyAnswers'
    | 'snapshotEmptyRate'
    | 'faultKeys'
  >
>;

export interface Simulator {
  /** Base URL without a trailing slash, e.g. http://127.0.0.1:43123 */
  url: string;
  apiKey: string;
  /**
   * Everything it would serve now, ignoring cap, faults, forbidden/missing endpoints and empty
   * answers; malformed items listed apart, odd values named, day counts in meta.
   */
  truth(): GroundTruth;
  /** Late items on the last days, edits, one A/B test removed, results grown. */
  advance(options?: AdvanceOptions): AdvanceReport;
  setOptions(patch: SimulatorPatch): void;
  /** Renames a test, or changes its page or goal, as its owner would (Dataset.editTest). */
  editTest(kind: TestKind, id: string, patch: TestEdit): void;
  /** Changes a heatmap's attributes (Dataset.editHeatmap). */
  editHeatmap(id: string, patch: HeatmapEdit): void;
  /** Replaces a test's results (Dataset.setTestResults). */
  setTestResults(kind: TestKind, id: string, results: readonly TestResult[]): void;
  /** Moves a windowed item to another day, key kept (Dataset.moveItem). */
  moveItem(resource: WindowedResource, fromDay: string, index: number, toDay: string): MovedItem;
  /** Deletes a windowed item from its day (Dataset.removeItem); returns its key. */
  removeItem(resource: WindowedResource, day: string, index: number): string;
  stats(): SimulatorStats;
  resetStats(): void;
  /** POSTs a spec-6 webhook body for each valid feedback item and survey answer. */
  sendWebhooks(targetUrl: string, options?: WebhookSendOptions): Promise<WebhookSendResult>;
  /** Stops listening; requests still waiting (latency, stalls) are cut off at once. */
  stop(): Promise<void>;
}

export async function startSimulator(options: SimulatorOptions): Promise<Simulator> {
  const picked = pickSettings(options);
  validateSettings(picked);
  // Our own copies, so a caller changing its arrays later does not change what is served.
  const settings: ServingSettings = ownCopies({ ...DEFAULT_SETTINGS, ...picked });
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
    const key = request.headers.authorization;
    const accepted = key !== undefined && (key === settings.apiKey || settings.apiKeys.includes(key));
    reply.raw.once(
      'close',
      stats.start(request.url.split('?')[0] ?? request.url, accepted ? key : undefined),
    );
    done();
  });
  const guarded = createGuard({
    settings,
    stats,
    pickFault: createFaultPicker(dataset.seed),
    pickEmpty: createEmptyPicker(dataset.seed),
    stopping: stopping.signal,
  });
  const served = createServedDays(dataset, () => settings.reuseIds);
  const windows = { from: dataset.from, to: dataset.to, day: served.day };
  registerRoutes(app, { dataset, windows, settings, guarded });
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
  const truth = (): GroundTruth =>
    assembleTruth(dataset, viewOf(settings), {
      day: served.day,
      dayOffsetMinutes: settings.dayOffsetMinutes,
      dayZone: settings.dayZone,
      caps: {
        feedback: capOf(settings, 'feedback'),
        survey: capOf(settings, 'survey'),
        recordings: capOf(settings, 'recordings'),
      },
      reusedIdDays: served.reuseDays(),
    });

  return {
    url: `http://${urlHost(host)}:${port}`,
    apiKey: settings.apiKey,
    truth,
    advance(advanceOptions) {
      const report = dataset.advance(advanceOptions);
      // Late items change the days' lengths, and so which keys a reuse day takes over.
      served.clear();
      return report;
    },
    setOptions(patch) {
      const { apiKey: _ignored, ...picked } = pickSettings(patch);
      validateSettings(picked);
      Object.assign(settings, ownCopies(picked));
    },
    editTest: (kind, id, patch) => dataset.editTest(kind, id, patch),
    editHeatmap: (id, patch) => dataset.editHeatmap(id, patch),
    setTestResults: (kind, id, results) => dataset.setTestResults(kind, id, results),
    moveItem(resource, fromDay, index, toDay) {
      const moved = dataset.moveItem(resource, fromDay, index, toDay);
      // The days' lengths changed, and so which keys a reuse day takes over.
      served.clear();
      return moved;
    },
    removeItem(resource, day, index) {
      const key = dataset.removeItem(resource, day, index);
      served.clear();
      return key;
    },
    stats: () => stats.snapshot(),
    resetStats: () => stats.reset(),
    sendWebhooks: (targetUrl, sendOptions) => sendWebhooks(truth(), targetUrl, sendOptions),
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
