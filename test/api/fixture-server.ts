/**
 * A real local HTTP server with scripted responses, for the API client tests. Each request takes
 * the next handler of the script; the last one repeats once the script runs out.
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { inspect } from 'node:util';
import { createLogger, type Logger } from '../../src/log/logger.js';

export type Handler = (req: IncomingMessage, res: ServerResponse) => void;

export interface RecordedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
}

export interface FixtureServer {
  baseUrl: string;
  requests: RecordedRequest[];
  script(...handlers: Handler[]): void;
  close(): Promise<void>;
}

export async function startFixtureServer(): Promise<FixtureServer> {
  let handlers: Handler[] = [];
  const requests: RecordedRequest[] = [];
  const server = createServer((req, res) => {
    requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    const handler = handlers.length > 1 ? handlers.shift() : handlers[0];
    if (handler) handler(req, res);
    else json({ error: 'no script' }, 500)(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    requests,
    script: (...next) => {
      handlers = next;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A base URL where nothing listens: connections are refused. */
export async function closedPortUrl(): Promise<string> {
  const server = await startFixtureServer();
  await server.close();
  return server.baseUrl;
}

export const json =
  (body: unknown, status = 200, headers: Record<string, string> = {}): Handler =>
  (_req, res) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };

export const text =
  (body: string, status = 200, contentType = 'text/html'): Handler =>
  (_req, res) => {
    res.writeHead(status, { 'content-type': contentType });
    res.end(body);
  };

export const status =
  (code: number, headers: Record<string, string> = {}): Handler =>
  (_req, res) => {
    res.writeHead(code, headers);
    res.end();
  };

/** Headers and half a body, then the socket is destroyed: "connection reset mid-body". */
export const resetMidBody = (): Handler => (req, res) => {
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
  res.write('[{"id":', () => req.socket.destroy());
};

/** Never answers. */
export const stall = (): Handler => () => {};

/** Headers and a partial body, then silence. */
export const stallMidBody = (): Handler => (_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
  res.write('[{"id":');
};

/** An injected sleep that returns at once and remembers what it was asked to wait. */
export function recordingSleep(): { delays: number[]; sleep: (ms: number) => Promise<void> } {
  const delays: number[] = [];
  return {
    delays,
    sleep: async (ms) => {
      delays.push(ms);
    },
  };
}

/** Returns the given values in turn, then repeats the last. */
export function sequence(...values: number[]): () => number {
  let i = 0;
  return () => values[Math.min(i++, values.length - 1)] ?? 0;
}

/** A pino logger (with the production redaction) that writes into an array. */
export function captureLogger(): { lines: string[]; logger: Logger } {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      lines.push(chunk.toString());
      callback();
    },
  });
  return { lines, logger: createLogger({ level: 'debug', destination }) };
}

/** Everything an error could reveal: String(), message, stack, context, and the whole cause chain. */
export function everythingSaidBy(error: unknown): string {
  const parts: string[] = [inspect(error, { depth: 20, showHidden: true })];
  let current: unknown = error;
  for (let depth = 0; depth < 10 && current != null; depth++) {
    parts.push(String(current));
    if (current instanceof Error) {
      parts.push(current.message, current.stack ?? '', JSON.stringify(current));
      const context = (current as { context?: unknown }).context;
      if (context !== undefined) parts.push(JSON.stringify(context));
      current = current.cause;
    } else {
      parts.push(inspect(current, { depth: 20 }));
      current = undefined;
    }
  }
  return parts.join('\n');
}

export async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the promise to reject');
}
