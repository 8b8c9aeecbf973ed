import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import Fastify, {
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  LogController,
} from 'fastify';
import type pg from 'pg';
import type { SourceConfig } from '../config/config.js';
import { classifyDatabaseError } from '../db/transaction.js';
import { errorMessage } from '../errors.js';
import type { Logger } from '../log/logger.js';
import { type AllowList, createAllowList } from './allow-list.js';
import {
  createDeliveryBatcher,
  type DeliveryBatcher,
  type DeliveryBatcherOptions,
  QueueFullError,
} from './delivery-batcher.js';
import { createLimitedHttpServer } from './http-server.js';
import { jsonDepth, MAX_JSON_DEPTH } from './json-limits.js';
import { maskUrl } from './mask-url.js';
import { createRefusalLog, REFUSAL_LOG_INTERVAL_MS } from './refusal-log.js';
import { tokensMatch } from './token.js';

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
}

export type WebhookServer = FastifyInstance<Server, IncomingMessage, ServerResponse, Logger> & {
  /** What the delivery queue holds now. */
  deliveryStats: DeliveryBatcher['stats'];
};

interface Endpoint {
  source: SourceConfig;
  token: string;
  allowed: AllowList | undefined;
}

/** Seconds a sender is asked to wait after a 503: the database is probably back by then. */
const RETRY_AFTER_SECONDS = 5;
/** Tokens are at most 256 characters (config.ts); find-my-way answers 404 above maxParamLength. */
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
const CLOSE_AFTER = new Set([401, 403, 404, 413]);
/** Refusals counted in the aggregated log line instead of one line each. */
const COUNTED_REFUSALS = new Set([401, 403, 404]);

/**
 * The webhook receiver (spec 6) as a fastify instance, not yet listening: tests call inject() or
 * listen on port 0; `serve` listens on the configured address.
 *
 * POST /webhooks/<source>/<token>, in this order:
 *   404 unknown source (or one without a token) -> 403 address not allowed -> 401 wrong token
 *   -> 415 not JSON -> 413 over the body limit -> 400 malformed JSON or prototype poisoning
 *   -> stored and applied in one transaction, then 200; or stored as rejected, then 422;
 *   503 when the database cannot store it (nothing is acknowledged that is not stored), at once
 *   when the delivery queue holds its maximum (delivery-batcher.ts).
 * 401/403/404/413 close the connection without reading the rest of the body; every request must
 * arrive within requestTimeoutMs (http-server.ts); refusals are logged as counts (refusal-log.ts).
 * GET /healthz: the process is up. GET /readyz: the database answers.
 */
export function createWebhookServer(options: WebhookServerOptions): WebhookServer {
  const { pool, bodyLimit } = options;
  const persistTimeoutMs = options.persistTimeoutMs ?? 10_000;
  const readyTimeoutMs = options.readyTimeoutMs ?? 2_000;
  const logger = options.logger.child({ component: 'webhooks' });
  const endpoints = new Map<string, Endpoint>();
  for (const source of options.sources) {
    if (source.webhookToken === undefined) continue;
    endpoints.set(source.name, {
      source,
      token: source.webhookToken,
      allowed: source.allowedIps === undefined ? undefined : createAllowList(source.allowedIps),
    });
  }
  const knownSources = new Set(endpoints.keys());
  const batcher = createDeliveryBatcher({ pool, ...options.batching });
  const trustedProxy = options.trustedProxy ?? [];
  const refusals = createRefusalLog(logger, options.refusalLogIntervalMs ?? REFUSAL_LOG_INTERVAL_MS);
  const requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  /** Size of each parsed body as received, for the queue's byte bound. */
  const bodyBytes = new WeakMap<FastifyRequest, number>();
  /** Requests answered 503 because the queue was full: counted, not logged one by one. */
  const queueFull = new WeakSet<FastifyRequest>();

  const app = Fastify({
    serverFactory: (handler) =>
      createLimitedHttpServer(handler, {
        requestTimeoutMs,
        // An answer may wait persistTimeoutMs for its commit with the socket silent.
        idleTimeoutMs: persistTimeoutMs + requestTimeoutMs,
      }),
    loggerInstance: logger,
    // Fastify's own request lines carry the URL, and with it the token: onResponse logs instead.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit,
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    trustProxy: trustedProxy.length > 0 ? [...trustedProxy] : false,
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // A malformed request line holds the URL too (err.rawPacket): logged by its code only.
    clientErrorHandler: (error: NodeJS.ErrnoException, socket: Socket) => {
      // Or one whose headers and body did not arrive within the request timeout: 408.
      const timedOut = error.code === 'ERR_HTTP_REQUEST_TIMEOUT';
      logger.debug({ code: error.code }, timedOut ? 'request timed out' : 'malformed HTTP request');
      const status = timedOut ? '408 Request Timeout' : '400 Bad Request';
      if (socket.writable) socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\n\r\n`);
      socket.destroy();
    },
  });

  // pg emits 'error' on a checked-out client whose connection drops (the database restarts, say);
  // with no listener that is an uncaught exception and the receiver dies. The statement in flight
  // fails anyway and its delivery is answered 503, so the event itself needs no handling.
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

  // JSON only: without a parser for any other media type, fastify answers 415 by itself.
  app.removeAllContentTypeParsers();
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit }, (request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    bodyBytes.set(request, Buffer.byteLength(text));
    parseJson(request, text, done);
  });

  // Once close() has begun, each answer in flight also closes its connection: a kept-alive
  // connection would otherwise hold the shutdown up until its keep-alive timeout.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onSend', async (_request, reply) => {
    if (closing) reply.header('connection', 'close');
    // Node would otherwise read the rest of the body to keep the connection alive; with `close`
    // it ends the socket once the answer is written, reading nothing more.
    if (CLOSE_AFTER.has(reply.statusCode)) reply.header('connection', 'close');
  });
  app.addHook('onClose', async () => {
    refusals.flush();
  });

  app.addHook('onResponse', async (request, reply) => {
    const status = reply.statusCode;
    const line = {
      method: request.method,
      url: maskUrl(request.url, knownSources),
      status,
      ms: Math.round(reply.elapsedTime),
      ip: request.ip,
    };
    if (COUNTED_REFUSALS.has(status) || queueFull.has(request)) {
      refusals.count(queueFull.has(request) ? 'queue_full' : String(status), request.ip);
      logger.debug(line, 'request refused');
    } else if (status >= 500) logger.error(line, 'request failed');
    else if (request.url === '/healthz' || request.url === '/readyz') logger.debug(line, 'probe');
    else logger.info(line, 'request');
  });

  app.setErrorHandler((error: unknown, request, reply) => {
    const code = (error as { code?: unknown }).code;
    const statusCode = (error as { statusCode?: unknown }).statusCode;
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

  app.setNotFoundHandler((_request, reply) => reply.code(404).send({ error: 'not_found' }));

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

  app.post<{ Params: { source: string; token: string } }>(
    '/webhooks/:source/:token',
    {
      // Before the body is read: an unauthenticated sender costs no parsing and writes nothing.
      onRequest: async (request, reply) => {
        const endpoint = endpoints.get(request.params.source);
        if (endpoint === undefined) return reply.code(404).send({ error: 'not_found' });
        if (endpoint.allowed !== undefined && !isAllowed(endpoint.allowed, request.ip))
          return reply.code(403).send({ error: 'forbidden' });
        if (!tokensMatch(endpoint.token, request.params.token))
          return reply.code(401).send({ error: 'unauthorized' });
      },
    },
    async (request, reply) => {
      const endpoint = endpoints.get(request.params.source) as Endpoint;
      // A POST without Content-Type and without a body reaches here with no body at all.
      if (request.body === undefined) return unsupportedMediaType(reply);
      if (jsonDepth(request.body) > MAX_JSON_DEPTH)
        return reply
          .code(400)
          .send({ error: 'malformed_json', message: `nested deeper than ${MAX_JSON_DEPTH} levels` });
      return deliver(request, reply, endpoint);
    },
  );

  async function deliver(request: FastifyRequest, reply: FastifyReply, endpoint: Endpoint) {
    const source = {
      name: endpoint.source.name,
      baseUrl: endpoint.source.baseUrl,
      ...(endpoint.source.pii === undefined ? {} : { pii: endpoint.source.pii }),
    };
    // At the persist timeout the sender is answered 503, and a delivery still waiting in the
    // queue is dropped from it: what is answered 503 is not applied later from memory.
    const abandon = new AbortController();
    const timer = setTimeout(() => abandon.abort(), persistTimeoutMs);
    try {
      const outcome = await batcher.receive(source, request.body, {
        bytes: bodyBytes.get(request) ?? 0,
        signal: abandon.signal,
      });
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
      if (outcome.status === 'applied') {
        return reply
          .code(200)
          .send({ status: 'applied', event_id: outcome.eventId, duplicate: outcome.duplicate });
      }
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
        queueFull.add(request);
        return reply.code(503).header('retry-after', RETRY_AFTER_SECONDS).send({ error: 'busy' });
      }
      const failure = classifyDatabaseError(error);
      const context = { source: source.name, err: errorMessage(error) };
      if (failure === 'unavailable') {
        logger.warn(context, 'delivery not stored: the database is unavailable; answered 503');
        return reply.code(503).header('retry-after', RETRY_AFTER_SECONDS).send({ error: 'unavailable' });
      }
      logger.error(context, 'delivery not stored: unexpected error');
      return reply.code(500).send({ error: 'internal_error' });
    } finally {
      clearTimeout(timer);
    }
  }

  return Object.assign(app, { deliveryStats: () => batcher.stats() });
}

function unsupportedMediaType(reply: FastifyReply) {
  return reply.code(415).send({ error: 'unsupported_media_type', expected: 'application/json' });
}

function isAllowed(allowed: AllowList, address: string | undefined): boolean {
  try {
    return address !== undefined && allowed(address);
  } catch {
    return false;
  }
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
