import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { processRegistry } from './registry.js';

export interface MetricsServer {
  /** e.g. http://127.0.0.1:9464/metrics */
  url: string;
  port: number;
  close(): Promise<void>;
}

export interface MetricsServerOptions {
  /** 0: any free port (see `port` of the result). */
  port: number;
  /** Default 127.0.0.1: metrics say how busy and how healthy the host is, not for the internet. */
  host?: string;
  /** Default: the process registry. */
  registry?: Registry;
}

/**
 * GET /metrics answers the registry's exposition text; anything else 404 (405 for another method
 * on /metrics). Plain node:http: one endpoint, read by a scraper every few seconds.
 */
export async function startMetricsServer(options: MetricsServerOptions): Promise<MetricsServer> {
  const registry = options.registry ?? processRegistry;
  const server = http.createServer((request, response) => {
    const path = (request.url ?? '').split('?')[0];
    if (path !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response
        .writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' })
        .end('method not allowed\n');
      return;
    }
    registry.metrics().then(
      (text) => {
        response.writeHead(200, { 'content-type': registry.contentType });
        response.end(request.method === 'HEAD' ? undefined : text);
      },
      () => {
        response.writeHead(500, { 'content-type': 'text/plain' }).end('metrics unavailable\n');
      },
    );
  });
  // A scraper keeps its connection; one idle for long is closed.
  server.keepAliveTimeout = 65_000;
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const shown = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shown}:${port}/metrics`,
    port,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}
