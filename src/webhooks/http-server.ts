import http from 'node:http';

/**
 * Limits of the node HTTP server under the receiver, so that no sender, authenticated or not,
 * holds a socket or memory for long (issue 17: a wrong-token request declaring 10 GB at 1 byte/s
 * kept its socket past 150 s).
 */
export interface HttpLimits {
  /** Longest the headers and the whole body may take to arrive; then 408 and the socket closed. */
  requestTimeoutMs: number;
  /** Longest a socket may stay silent, an answer being prepared included (> the persist timeout). */
  idleTimeoutMs: number;
}

/**
 * Sockets at once; one more is closed as soon as it is accepted. 1,024 is well above a
 * webhook sender's parallelism and well below the default file-descriptor limit.
 */
export const MAX_CONNECTIONS = 1_024;
/**
 * Node's default (fastify's is 72 s): a sender delivering again within 5 s reuses its connection,
 * an idle one holds no socket for long. A reverse proxy that keeps upstream connections longer
 * may then meet a closed one: set its upstream keep-alive below 5 s.
 */
const KEEP_ALIVE_TIMEOUT_MS = 5_000;
/** A kept-alive socket is closed after this many requests, so no connection lives forever. */
const MAX_REQUESTS_PER_SOCKET = 1_000;
/** Node checks the request timeout only this often (default 30 s): 1 s keeps it close to exact. */
const TIMEOUT_CHECK_INTERVAL_MS = 1_000;

/** For fastify's serverFactory: fastify applies none of its timeout options to such a server. */
export function createLimitedHttpServer(handler: http.RequestListener, limits: HttpLimits): http.Server {
  const server = http.createServer(
    {
      requestTimeout: limits.requestTimeoutMs,
      headersTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
      connectionsCheckingInterval: TIMEOUT_CHECK_INTERVAL_MS,
    },
    handler,
  );
  server.setTimeout(limits.idleTimeoutMs);
  server.maxConnections = MAX_CONNECTIONS;
  server.maxRequestsPerSocket = MAX_REQUESTS_PER_SOCKET;
  return server;
}
