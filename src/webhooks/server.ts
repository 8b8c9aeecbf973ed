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
import { errorMessage } from '../errors.js';
import type { Logger } from '../log/logger.js';
import { type AllowList, createAllowList } from './allow-list.js';
import { classifyDatabaseError } from './database-errors.js';
import { createDeliveryBatcher, type DeliveryBatcherOptions } from './delivery-batcher.js';
import { jsonDepth, MAX_JSON_DEPTH } from './json-limits.js';
import { maskUrl } from './mask-url.js';
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
   * does not answer at all). If it commits later, the sender's retry is a duplicate: same result.
   */
  persistTimeoutMs?: number;
  /** Longest /readyz waits for `select 1`. */
  readyTimeoutMs?: number;
  /** Micro-batching of deliveries under load (src/webhooks/delivery-batcher.ts). */
  batching?: Omit<DeliveryBatcherOptions, 'pool'>;
}

export type WebhookServer = FastifyInstance<Server, IncomingMessage, ServerResponse, Logger>;

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
 * The webhook receiver (spec 6) as a fastify instance, not yet listening: tests call inject() or
 * listen on port 0; `serve` listens on the configured address.
 *
 * POST /webhooks/<source>/<token>, in this order:
 *   404 unknown source (or one without a token) -> 403 address not allowed -> 401 wrong token
 *   -> 415 not JSON -> 413 over the body limit -> 400 malformed JSON or prototype poisoning
 *   -> stored and applied in one transaction, then 200; or stored as rejected, then 422;
 *   503 when the database cannot store it (nothing is acknowledged that is not stored).
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

  const app = Fastify({
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
      logger.debug({ code: error.code }, 'malformed HTTP request');
      if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
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
  app.addContentTypeParser(
    'application/json',
    { parseAs: 'string', bodyLimit },
    app.getDefaultJsonParser('error', 'error'),
  );

  // Once close() has begun, each answer in flight also closes its connection: a kept-alive
  // connection would otherwise hold the shutdown up until its keep-alive timeout.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onSend', async (_request, reply) => {
    if (closing) reply.header('connection', 'close');
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
    if (status >= 500) logger.error(line, 'request failed');
    else if (status === 401 || status === 403) logger.warn(line, 'request refused');
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
    try {
      const outcome = await withTimeout(
        batcher.receive(source, request.body),
        persistTimeoutMs,
        'the delivery was not stored in time',
      );
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
      const failure = classifyDatabaseError(error);
      const context = { source: source.name, err: errorMessage(error) };
      if (failure === 'unavailable') {
        logger.warn(context, 'delivery not stored: the database is unavailable; answered 503');
        return reply.code(503).header('retry-after', RETRY_AFTER_SECONDS).send({ error: 'unavailable' });
      }
      logger.error(context, 'delivery not stored: unexpected error');
      return reply.code(500).send({ error: 'internal_error' });
    }
  }

  return app;
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
