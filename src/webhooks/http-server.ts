import http from 'node:http';
import type { Socket } from 'node:net';
import { type ConnectionShares, OpenConnections } from './connection-shares.js';

/**
 * Limits of the node HTTP server under the receiver, so that no sender, authenticated or not,
 * holds a socket or memory for long (a wrong-token request declaring 10 GB at 1 byte/s
 * kept its socket past 150 s).
 */
export interface HttpLimits {
  /** Longest the headers and the whole body may take to arrive; then 408 and the socket closed. */
  requestTimeoutMs: number;
  /** Longest a socket may stay silent, an answer being prepared included (> the persist timeout). */
  idleTimeoutMs: number;
  /** Sockets one peer address may hold at once; one more is closed as soon as it is accepted. */
  maxConnectionsPerAddress: number;
  /** Sockets the addresses of one IPv4 /24 or IPv6 /64 may hold together (connection-shares.ts). */
  maxConnectionsPerSubnet: number;
}

/**
 * Sockets at once; one more is closed as soon as it is accepted. 1,024 is well above a
 * webhook sender's parallelism and well below the default file-descriptor limit.
 */
const MAX_CONNECTIONS = 1_024;
/**
 * Node's default (fastify's is 72 s): a sender delivering again within 5 s reuses its connection,
 * an idle one holds no socket for long. A reverse proxy that keeps upstream connections longer
 * may then meet a closed one: set its upstream keep-alive below 5 s.
 */
const KEEP_ALIVE_TIMEOUT_MS = 5_000;
/**
 * A kept-alive socket is closed after its answer to this many requests, so no connection lives
 * forever. Not node's maxRequestsPerSocket: past it node answers every further request on the
 * socket 503, and a client that keeps sending on it (load generators, some HTTP clients) would
 * get a 503 for a delivery the receiver could take. Here the last answer carries
 * `Connection: close` and the socket ends after it; what the client sends later is never answered,
 * so it delivers again on a new connection.
 */
export const MAX_REQUESTS_PER_SOCKET = 1_000;
/** Node checks the request timeout only this often (default 30 s): 1 s keeps it close to exact. */
const TIMEOUT_CHECK_INTERVAL_MS = 1_000;

/** For fastify's serverFactory: fastify applies none of its timeout options to such a server. */
export function createLimitedHttpServer(handler: http.RequestListener, limits: HttpLimits): http.Server {
  const served = new WeakMap<object, number>();
  const server = http.createServer(
    {
      requestTimeout: limits.requestTimeoutMs,
      headersTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
      connectionsCheckingInterval: TIMEOUT_CHECK_INTERVAL_MS,
    },
    (request, response) => {
      const count = (served.get(request.socket) ?? 0) + 1;
      served.set(request.socket, count);
      if (count >= MAX_REQUESTS_PER_SOCKET) response.setHeader('connection', 'close');
      handler(request, response);
    },
  );
  server.setTimeout(limits.idleTimeoutMs);
  server.maxConnections = MAX_CONNECTIONS;
  limitShares(server, {
    perAddress: limits.maxConnectionsPerAddress,
    perSubnet: limits.maxConnectionsPerSubnet,
  });
  return server;
}

/**
 * One client holding idle sockets up to the global cap would leave every other sender without a
 * connection: beyond its share (its address's, and its network's) its new sockets are closed as
 * accepted. Behind a reverse proxy every connection comes from the proxy: both shares must then
 * exceed the proxy's upstream pool.
 */
function limitShares(server: http.Server, shares: ConnectionShares): void {
  const open = new OpenConnections(shares);
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? '';
    if (!open.admit(address).admit) {
      socket.destroy();
      return;
    }
    socket.once('close', () => open.release(address));
  });
}
