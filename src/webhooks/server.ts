import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import rateLimit from '@fastify/rate-limit';
import Fastify, {
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  LogController,
} from 'fastify';
import type pg from 'pg';
import { DEFAULT_MAX_CONNECTIONS_PER_ADDRESS, DEFAULT_MAX_CONNECTIONS_PER_SUBNET } from '../config/config.js';
import type { SourceConfig } from '../config/source-config.js';
import { classifyDatabaseError } from '../db/transaction.js';
import { errorMessage } from '../errors.js';
import type { Logger } from '../log/logger.js';
import { deliveryOutcome, recordDelivery } from '../metrics/receiver-metrics.js';
import {
  createDeliveryBatcher,
  DeliveryAbandonedError,
  type DeliveryBatcher,
  type DeliveryBatcherOptions,
  QueueFullError,
} from './delivery-batcher.js';
import { admit, type Endpoint, isUtf8ContentType, webhookEndpoints } from './endpoints.js';
import { createLimitedHttpServer } from './http-server.js';
import { jsonDepth, MAX_JSON_DEPTH } from './json-limits.js';
import { maskUrl } from './mask-url.js';
import { createRefusalLog, REFUSAL_LOG_INTERVAL_MS, type RefusalLog } from './refusal-log.js';
import { startRetention } from './retention.js';

export interface WebhookServerOptions {
  pool: pg.Pool;
  logger: Logger;
  /** A source with a webhookToken gets the address /webhooks/<name>/<token>; the others none. */
  sources: readonly SourceConfig[];
  /** Bytes; a larger body is answered 413 before it is read to the end or parsed. */
  bodyLimit: number;
  /** Proxies whose X-Forwarded-For is believed (IPs or CIDRs); none: the peer is the client. */
  trustedProxy?: readonly string[];
  /**
   * Longest a delivery may wait for its transaction before the answer is 503 (a database that
   * does not answer at all). One still queued is then dropped; one already in a transaction may
   * commit later, and the sender's retry is a duplicate: same result.
   */
  persistTimeoutMs?: number;
  /** Longest /readyz waits for `select 1`. */
  readyTimeoutMs?: number;
  /** Micro-batching of deliveries under load, and its bounds (src/webhooks/delivery-batcher.ts). */
  batching?: Omit<DeliveryBatcherOptions, 'pool'>;
  /** Longest the headers and body of a request may take to arrive (then 408, socket closed). */
  requestTimeoutMs?: number;
  /** Refused requests are logged as counts, one warn line per this interval at most. */
  refusalLogIntervalMs?: number;
  /**
   * Deliveries per minute each source may make (INSIGHTS_WEBHOOK_RATE_LIMIT); more are answered
   * 429 with Retry-After before their body is read. Unset: no limit.
   */
  rateLimitPerMinute?: number;
  /**
   * Stored bodies first received more than this many days ago are cleared, at start and then
   * every retentionIntervalMs (INSIGHTS_WEBHOOK_RETENTION_DAYS; retention.ts). Unset: kept.
   */
  retentionDays?: number;
  retentionIntervalMs?: number;
  /** Sockets one client address may hold (INSIGHTS_WEBHOOK_MAX_CONNECTIONS_PER_ADDRESS). */
  maxConnectionsPerAddress?: number;
  /** Sockets one IPv4 /24 or IPv6 /64 may hold (INSIGHTS_WEBHOOK_MAX_CONNECTIONS_PER_SUBNET). */
  maxConnectionsPerSubnet?: number;
}

export type WebhookServer = FastifyInstance<Server, IncomingMessage, ServerResponse, Logger> & {
  /** What the delivery queue holds now. */
  deliveryStats: DeliveryBatcher['stats'];
};

type App = FastifyInstance<Server, IncomingMessage, ServerResponse, Logger>;

/** Seconds a sender is asked to wait after a 503: the database is probably back by then. */
const RETRY_AFTER_SECONDS = 5;
/** Tokens are at most 256 characters (config/network.ts); find-my-way answers 404 above maxParamLength. */
const MAX_PARAM_LENGTH = 300;
/**
 * A webhook body is at most a few hundred KiB, sent in milliseconds: 5 s for headers and body
 * leave room for a slow network and cut a slow-body sender (1 byte/s) early.
 */
const DEFAULT_REQUEST_TIMEOUT_MS = 5_000;
/**
 * Answers after which the connection is closed without reading what is left of the body: a
 * sender refused before its body is read must not be able to push its declared gigabytes.
 */
const CLOSE_AFTER = new Set([403, 404, 413, 415, 429]);
/** Refusals counted in the aggregated log line instead of one line each. */
const COUNTED_REFUSALS = new Set([403, 404, 429]);

/** What the one log line of a request that failed says beyond its status (logRequests). */
interface FailureNote {
  msg: string;
  context: Record<string, unknown>;
  /**
   * Counted in the refusal log under this reason instead of a line of its own: a slow database
   * answers every delivery 503, and one warn line each filled the log (489 in 20 s).
   */
  counted?: string;
}

/** What the route's handlers share, per server. */
interface Receiver {
  logger: Logger;
  endpoints: Map<string, Endpoint>;
  batcher: DeliveryBatcher;
  /** Size of each parsed body as received, for the queue's byte bound. */
  bodyBytes: WeakMap<FastifyRequest, number>;
  /** Requests answered 503 because the queue was full: counted, not logged one by one. */
  queueFull: WeakSet<FastifyRequest>;
  /** Why a request failed: said in its one log line. */
  failures: WeakMap<FastifyRequest, FailureNote>;
}

class RateLimitedError extends Error {
  readonly statusCode = 429;
  constructor() {
    super('too many deliveries from this source');
    this.name = 'RateLimitedError';
  }
}

/**
 * The webhook receiver (spec 6) as a fastify instance, not yet listening: tests call inject() or
 * listen on port 0; `serve` listens on the configured address.
 *
 * POST /webhooks/<source>/<token>, in this order:
 *   404 unknown source, source without a token, or wrong token (one answer for all three)
 *   -> 403 address not allowed -> 429 over the source's rate limit -> 415 not JSON, or not UTF-8
 *   -> 413 over the body limit -> 400 malformed JSON or prototype poisoning
 *   -> stored and applied in one transaction, then 200 (`applied`, or `suppressed` for a
 *   forgotten visitor, stored nowhere); or stored as rejected, then 422;
 *   503 when the database cannot store it (nothing is acknowledged that is not stored), at once
 *   when the delivery queue holds its maximum (delivery-batcher.ts).
 * 403/404/413/415/429 close the connection without reading the rest of the body; every request
 * must arrive within requestTimeoutMs (http-server.ts); refusals are logged as counts
 * (refusal-log.ts).
 * GET /healthz: the process is up. GET /readyz: the database answers. /metrics is not here: it
 * is served on its own address (INSIGHTS_METRICS_HOST/PORT, loopback by default), never to the
 * internet the webhooks come from.
 */
export function createWebhookServer(options: WebhookServerOptions): WebhookServer {
  const logger = options.logger.child({ component: 'webhooks' });
  const persistTimeoutMs = options.persistTimeoutMs ?? 10_000;
  const receiver: Receiver = {
    logger,
    endpoints: webhookEndpoints(options.sources),
    // At the persist timeout the sender is answered 503, and a delivery still waiting in the
    // queue is dropped from it: what is answered 503 is not applied later from memory.
    batcher: createDeliveryBatcher({ pool: options.pool, persistTimeoutMs, ...options.batching }),
    bodyBytes: new WeakMap(),
    queueFull: new WeakSet(),
    failures: new WeakMap(),
  };
  const app = createApp(options, logger, persistTimeoutMs);
  const knownSources = new Set(receiver.endpoints.keys());
  const refusals = createRefusalLog(logger, options.refusalLogIntervalMs ?? REFUSAL_LOG_INTERVAL_MS);

  keepPoolErrorsQuiet(app, options.pool);
  acceptJsonOnly(app, options.bodyLimit, receiver.bodyBytes);
  closeRefusedConnections(app, refusals);
  logRequests(app, receiver, refusals, knownSources);
  handleErrors(app, logger, options.bodyLimit, knownSources);
  addProbes(app, options.pool, logger, options.readyTimeoutMs ?? 2_000);
  if (options.rateLimitPerMinute !== undefined)
    // global: false: only the webhook route is limited (its config names the limit), not probes.
    app.register(rateLimit, { global: false, errorResponseBuilder: () => new RateLimitedError() });
  // Inside a plugin registered after the rate limiter, so the limiter sees the route's config.
  app.register(async (scope) => addWebhookRoute(scope, receiver, options.rateLimitPerMinute));
  if (options.retentionDays !== undefined) clearOldBodiesWhileServing(app, options, logger);

  return Object.assign(app, { deliveryStats: () => receiver.batcher.stats() });
}

function createApp(options: WebhookServerOptions, logger: Logger, persistTimeoutMs: number): App {
  const trustedProxy = options.trustedProxy ?? [];
  const requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  return Fastify({
    serverFactory: (handler) =>
      createLimitedHttpServer(handler, {
        requestTimeoutMs,
        // An answer may wait persistTimeoutMs for its commit with the socket silent.
        idleTimeoutMs: persistTimeoutMs + requestTimeoutMs,
        maxConnectionsPerAddress: options.maxConnectionsPerAddress ?? DEFAULT_MAX_CONNECTIONS_PER_ADDRESS,
        maxConnectionsPerSubnet: options.maxConnectionsPerSubnet ?? DEFAULT_MAX_CONNECTIONS_PER_SUBNET,
      }),
    loggerInstance: logger,
    // No child logger per request (pino sets its redaction up again for each): the receiver's
    // lines are its own (logRequests), none goes through request.log.
    childLoggerFactory: (parent) => parent,
    // Fastify's own request lines carry the URL, and with it the token: onResponse logs instead.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: options.bodyLimit,
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    trustProxy: trustedProxy.length > 0 ? [...trustedProxy] : false,
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // A token too long for the router (414) or not valid percent-encoding (400): fastify's own
    // answers echo the path, token included, and tell such a token from a wrong one. Neither is
    // any source's token: the one answer of a wrong token.
    frameworkErrors: (_error, _request, reply) => notFound(reply),
    // A malformed request line holds the URL too (err.rawPacket): logged by its code only.
    clientErrorHandler: (error: NodeJS.ErrnoException, socket: Socket) => {
      // Or one whose headers and body did not arrive within the request timeout: 408.
      const timedOut = error.code === 'ERR_HTTP_REQUEST_TIMEOUT';
      logger.debug({ code: error.code }, timedOut ? 'request timed out' : 'malformed HTTP request');
      const status = timedOut ? '408 Request Timeout' : '400 Bad Request';
      if (socket.writable) socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\n\r\n`);
      socket.destroy();
    },
  }) as App;
}

/**
 * pg emits 'error' on a checked-out client whose connection drops (the database restarts, say);
 * with no listener that is an uncaught exception and the receiver dies. The statement in flight
 * fails anyway and its delivery is answered 503, so the event itself needs no handling.
 */
function keepPoolErrorsQuiet(app: App, pool: pg.Pool): void {
  const heard = new WeakSet<pg.PoolClient>();
  const onAcquire = (client: pg.PoolClient) => {
    if (heard.has(client)) return;
    heard.add(client);
    client.on('error', () => {});
  };
  pool.on('acquire', onAcquire);
  app.addHook('onClose', async () => {
    pool.off('acquire', onAcquire);
  });
}

/** JSON only: without a parser for any other media type, fastify answers 415 by itself. */
function acceptJsonOnly(app: App, bodyLimit: number, bodyBytes: WeakMap<FastifyRequest, number>): void {
  app.removeAllContentTypeParsers();
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit }, (request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    bodyBytes.set(request, Buffer.byteLength(text));
    parseJson(request, text, done);
  });
}

/**
 * Node would otherwise read the rest of a refused body to keep the connection alive; with
 * `Connection: close` it ends the socket once the answer is written, reading nothing more. Once
 * close() has begun, each answer in flight also closes its connection: a kept-alive connection
 * would otherwise hold the shutdown up until its keep-alive timeout.
 */
function closeRefusedConnections(app: App, refusals: RefusalLog): void {
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onSend', async (_request, reply) => {
    if (closing || CLOSE_AFTER.has(reply.statusCode)) reply.header('connection', 'close');
  });
  app.addHook('onClose', async () => {
    refusals.flush();
  });
}

/** One line per request, the token masked; refusals counted instead (refusal-log.ts). */
function logRequests(app: App, receiver: Receiver, refusals: RefusalLog, knownSources: Set<string>): void {
  const { logger, queueFull, failures } = receiver;
  app.addHook('onResponse', async (request, reply) => {
    const status = reply.statusCode;
    if (request.url.startsWith('/webhooks/'))
      recordDelivery(
        deliveryOutcome(status, { queueFull: queueFull.has(request) }),
        reply.elapsedTime / 1000,
      );
    const line = { logger, request, reply, knownSources };
    const failure = failures.get(request);
    if (COUNTED_REFUSALS.has(status) || queueFull.has(request)) {
      refusals.count(queueFull.has(request) ? 'queue_full' : String(status), request.ip);
      writeLine(line, 'debug', 'request refused');
    } else if (failure?.counted !== undefined) {
      refusals.count(failure.counted, request.ip);
      writeLine(line, 'debug', failure.msg, failure.context);
    } else if (failure !== undefined)
      writeLine(line, status >= 500 && status !== 503 ? 'error' : 'warn', failure.msg, failure.context);
    else if (status >= 500) writeLine(line, 'error', 'request failed');
    else if (request.url === '/healthz' || request.url === '/readyz') writeLine(line, 'debug', 'probe');
    else writeLine(line, 'info', 'request');
  });
}

/**
 * A request's line, built only when its level is written: at warn (the usual level of a busy
 * receiver) the masked URL and the object of every answered delivery were work for nothing.
 */
function writeLine(
  {
    logger,
    request,
    reply,
    knownSources,
  }: { logger: Logger; request: FastifyRequest; reply: FastifyReply; knownSources: Set<string> },
  level: 'debug' | 'info' | 'warn' | 'error',
  msg: string,
  context?: Record<string, unknown>,
): void {
  if (!logger.isLevelEnabled(level)) return;
  const line = {
    method: request.method,
    url: maskUrl(request.url, knownSources),
    status: reply.statusCode,
    ms: Math.round(reply.elapsedTime),
    ip: request.ip,
    ...context,
  };
  logger[level](line, msg);
}

function handleErrors(app: App, logger: Logger, bodyLimit: number, knownSources: Set<string>): void {
  app.setErrorHandler((error: unknown, request, reply) => {
    const code = (error as { code?: unknown }).code;
    const statusCode = (error as { statusCode?: unknown }).statusCode;
    // The limiter has set Retry-After and the X-RateLimit headers already.
    if (error instanceof RateLimitedError) return reply.code(429).send({ error: 'rate_limited' });
    if (code === 'FST_ERR_CTP_BODY_TOO_LARGE')
      return reply.code(413).send({ error: 'body_too_large', limit: bodyLimit });
    if (code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return unsupportedMediaType(reply);
    if (typeof statusCode === 'number' && statusCode >= 400 && statusCode < 500) {
      // Malformed JSON, prototype poisoning, an empty JSON body, a bad Content-Length.
      const error400 = statusCode === 400 ? 'malformed_json' : 'bad_request';
      return reply.code(statusCode).send({ error: error400, message: errorMessage(error) });
    }
    logger.error({ err: errorMessage(error), url: maskUrl(request.url, knownSources) }, 'unexpected error');
    return reply.code(500).send({ error: 'internal_error' });
  });
  // The same answer as an unknown source or a wrong token on the webhook route.
  app.setNotFoundHandler((_request, reply) => notFound(reply));
}

function addProbes(app: App, pool: pg.Pool, logger: Logger, readyTimeoutMs: number): void {
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => {
    try {
      await withTimeout(pool.query('select 1'), readyTimeoutMs, 'database did not answer');
      return { status: 'ready' };
    } catch (error) {
      logger.warn({ err: errorMessage(error) }, 'not ready: the database does not answer');
      return reply.code(503).header('retry-after', RETRY_AFTER_SECONDS).send({ status: 'unavailable' });
    }
  });
}

function addWebhookRoute(scope: FastifyInstance, receiver: Receiver, perMinute: number | undefined): void {
  scope.post<{ Params: { source: string; token: string } }>(
    '/webhooks/:source/:token',
    {
      // Keyed by source, not by address: the service sends from many. Counted after the token
      // check (below), so no one without the token can use up a source's allowance.
      ...(perMinute === undefined
        ? {}
        : {
            config: {
              rateLimit: {
                max: perMinute,
                timeWindow: 60_000,
                keyGenerator: (request: FastifyRequest) => (request.params as { source: string }).source,
              },
            },
          }),
      // Before the body is read: an unauthenticated sender costs no parsing and writes nothing.
      // The rate limiter's own onRequest hook runs after this one.
      onRequest: async (request, reply) => {
        const admission = admit(receiver.endpoints, request.params.source, request.params.token, request.ip);
        if (!admission.admitted)
          return admission.status === 404 ? notFound(reply) : reply.code(403).send({ error: 'forbidden' });
        if (!isUtf8ContentType(request.headers['content-type']))
          return reply.code(415).send({ error: 'unsupported_charset', expected: 'utf-8' });
      },
    },
    async (request, reply) => {
      const endpoint = receiver.endpoints.get(request.params.source) as Endpoint;
      // A POST without Content-Type and without a body reaches here with no body at all.
      if (request.body === undefined) return unsupportedMediaType(reply);
      if (jsonDepth(request.body) > MAX_JSON_DEPTH)
        return reply
          .code(400)
          .send({ error: 'malformed_json', message: `nested deeper than ${MAX_JSON_DEPTH} levels` });
      return deliver(receiver, request, reply, endpoint);
    },
  );
}

/** Stores a delivery, and answers it only once its transaction has committed. */
async function deliver(receiver: Receiver, request: FastifyRequest, reply: FastifyReply, endpoint: Endpoint) {
  const { logger, batcher } = receiver;
  const source = {
    name: endpoint.source.name,
    baseUrl: endpoint.source.baseUrl,
    pii: endpoint.source.pii,
  };
  try {
    const outcome = await batcher.receive(source, request.body, {
      bytes: receiver.bodyBytes.get(request) ?? 0,
    });
    if (logger.isLevelEnabled('debug'))
      logger.debug(
        {
          source: source.name,
          eventId: outcome.eventId,
          status: outcome.status,
          duplicate: outcome.duplicate,
          ...(outcome.status === 'applied' && outcome.merge ? { row: outcome.merge.row } : {}),
        },
        'delivery stored',
      );
    if (outcome.status === 'suppressed')
      // Acknowledged, so the service stops sending it; nothing of it is stored.
      return reply.code(200).send({ status: 'suppressed', event_id: null, duplicate: false });
    if (outcome.status === 'applied')
      return reply
        .code(200)
        .send({ status: 'applied', event_id: outcome.eventId, duplicate: outcome.duplicate });
    if (outcome.databaseRefusal !== undefined)
      // The database's message may quote the body: only its code and the object it names.
      logger.warn(
        { source: source.name, eventId: outcome.eventId, ...outcome.databaseRefusal },
        'delivery refused by the database; stored as rejected',
      );
    const first = outcome.issues[0];
    return reply.code(422).send({
      error: 'invalid_body',
      field: first?.field ?? '(body)',
      message: first?.message ?? 'invalid',
      issues: outcome.issues,
      event_id: outcome.eventId,
      duplicate: outcome.duplicate,
    });
  } catch (error) {
    if (error instanceof QueueFullError) {
      receiver.queueFull.add(request);
      return reply.code(503).header('retry-after', RETRY_AFTER_SECONDS).send({ error: 'busy' });
    }
    const context = { source: source.name, err: errorMessage(error) };
    if (classifyDatabaseError(error) === 'unavailable') {
      // Counted by logRequests, with the refusals; the request's own line at debug.
      const abandoned = error instanceof DeliveryAbandonedError;
      receiver.failures.set(request, {
        context,
        msg: abandoned
          ? 'delivery not stored in time; answered 503'
          : 'delivery not stored: the database is unavailable; answered 503',
        counted: abandoned ? 'not_stored_in_time' : 'database_unavailable',
      });
      return reply.code(503).header('retry-after', RETRY_AFTER_SECONDS).send({ error: 'unavailable' });
    }
    receiver.failures.set(request, { context, msg: 'delivery not stored: unexpected error' });
    return reply.code(500).send({ error: 'internal_error' });
  }
}

/** INSIGHTS_WEBHOOK_RETENTION_DAYS: at start (once listening) and then hourly, until close. */
function clearOldBodiesWhileServing(app: App, options: WebhookServerOptions, logger: Logger): void {
  const days = options.retentionDays as number;
  let retention: ReturnType<typeof startRetention> | undefined;
  app.addHook('onListen', async () => {
    retention ??= startRetention(options.pool, logger, days, options.retentionIntervalMs);
  });
  app.addHook('onClose', async () => {
    await retention?.stop();
  });
}

/**
 * One answer for an unknown source, a wrong token, an unknown path and a path the router could
 * not read (too long, bad percent-encoding): nothing to tell apart. The connection is closed here,
 * not only by the onSend hook, which a router's error (frameworkErrors) does not run: such a
 * socket stayed open and node read its declared body to the end.
 */
function notFound(reply: FastifyReply) {
  return reply.code(404).header('connection', 'close').send({ error: 'not_found' });
}

function unsupportedMediaType(reply: FastifyReply) {
  return reply.code(415).send({ error: 'unsupported_media_type', expected: 'application/json' });
}

/** Rejects after `ms`; the work itself goes on (a transaction cannot be abandoned halfway). */
function withTimeout<T>(work: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  // A late failure of the abandoned work must not become an unhandled rejection.
  work.catch(() => {});
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
