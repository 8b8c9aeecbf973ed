import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRandom, hashSeed } from '../../src/simulator/random.js';

/**
 * A deploy seen through a load balancer (SPEC-GAPS, "a reading that changes"): two simulators on
 * the same seed, so the same data, each playing one reading, behind one URL. Window requests are
 * counted as they arrive; the `n`th (from 0) goes to the old deploy before `switchAt`, to either at
 * random (a seeded coin, a fresh toss per request) until `steadyAt`, then to the new deploy alone.
 * `switchAt === steadyAt` is a plain deploy at one request; a stretch between them is a rolling
 * deploy, old and new instances answering side by side.
 */
export interface DeployPlan {
  switchAt: number;
  steadyAt: number;
  /** Seeds the coin of the rolling stretch. */
  seed: number;
}

export type Deploy = 'old' | 'new';

/** Which deploy answers window request `n` (from 0): a pure rule, the coin tossed only in the stretch. */
export function deployFor(n: number, plan: DeployPlan, coin: () => boolean): Deploy {
  if (n < plan.switchAt) return 'old';
  if (n >= plan.steadyAt) return 'new';
  return coin() ? 'old' : 'new';
}

/** One window request as the balancer routed it. */
export interface RoutedRequest {
  n: number;
  deploy: Deploy;
  /** Path and query, e.g. `/v1/feedback?startdate=...&enddate=...&limit=1000`. */
  url: string;
  status: number;
  /** Items in a 200 answer's array; null for any other answer. */
  served: number | null;
  /** Answered by the cache (`cache`): the old deploy's answer to the same address. */
  cached?: true;
}

export interface ReadingBalancer {
  url: string;
  /** Window requests routed so far, in the order they arrived. */
  routed(): readonly RoutedRequest[];
  close(): Promise<void>;
}

/** Counts the items of a window answer as it passes (small bodies: a few hundred items at most). */
function countServed(answer: http.IncomingMessage, entry: RoutedRequest): void {
  const chunks: Buffer[] = [];
  answer.on('data', (chunk: Buffer) => chunks.push(chunk));
  answer.on('end', () => {
    try {
      const body: unknown = JSON.parse(Buffer.concat(chunks).toString());
      entry.served = Array.isArray(body) ? body.length : null;
    } catch {
      entry.served = null;
    }
  });
}

const WINDOW_PATH = /\/(feedback|survey|recordings)$/;

/** A window answer the old deploy gave, as a cache in front of the service keeps it. */
interface KeptAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** Keeps `answer`'s body under `url` once it has come whole. */
function keepAnswer(cache: Map<string, KeptAnswer>, url: string, answer: http.IncomingMessage): void {
  const chunks: Buffer[] = [];
  answer.on('data', (chunk: Buffer) => chunks.push(chunk));
  answer.on('end', () => {
    if (answer.statusCode === 200)
      cache.set(url, { status: 200, headers: answer.headers, body: Buffer.concat(chunks) });
  });
}

export interface BalancerOptions {
  /**
   * A cache in front of the service keyed on the whole address (a CDN): a window request the old
   * deploy answered before the switch is answered so again whenever it is asked after it, by
   * either deploy's turn; every other request goes on to the deploy whose turn it is.
   */
  cache?: boolean;
}

export async function startReadingBalancer(
  targets: Record<Deploy, string>,
  plan: DeployPlan,
  options: BalancerOptions = {},
): Promise<ReadingBalancer> {
  const rng = createRandom(hashSeed(plan.seed, 'rolling deploy'));
  const coin = () => rng.chance(0.5);
  const agent = new http.Agent({ keepAlive: true });
  const routed: RoutedRequest[] = [];
  const cache = new Map<string, KeptAnswer>();
  let windows = 0;
  const server = http.createServer((request, response) => {
    const url = request.url ?? '/';
    const isWindow = WINDOW_PATH.test(url.split('?')[0] ?? url);
    // Snapshot endpoints read no gap: they go where the next window request would surely go.
    const deploy = isWindow ? deployFor(windows, plan, coin) : windows < plan.switchAt ? 'old' : 'new';
    const kept = isWindow && windows >= plan.switchAt ? cache.get(url) : undefined;
    const entry: RoutedRequest | undefined = isWindow
      ? { n: windows, deploy: kept === undefined ? deploy : 'old', url, status: 0, served: null }
      : undefined;
    if (entry !== undefined) {
      windows += 1;
      routed.push(entry);
    }
    if (kept !== undefined && entry !== undefined) {
      entry.cached = true;
      entry.status = kept.status;
      const body: unknown = JSON.parse(kept.body.toString());
      entry.served = Array.isArray(body) ? body.length : null;
      response.writeHead(kept.status, kept.headers);
      response.end(kept.body);
      return;
    }
    const keeps = options.cache === true && entry !== undefined && entry.n < plan.switchAt;
    const upstream = http.request(
      `${targets[deploy]}${url}`,
      { method: request.method, headers: request.headers, agent },
      (answer) => {
        if (entry !== undefined) {
          entry.status = answer.statusCode ?? 0;
          if (entry.status === 200) countServed(answer, entry);
        }
        if (keeps && !cache.has(url)) keepAnswer(cache, url, answer);
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      },
    );
    upstream.on('error', () => response.destroy());
    // A client that gave up (a timeout) ends the request upstream too; a finished one leaves the
    // kept-alive connection to the simulator alone.
    response.on('close', () => {
      if (!response.writableFinished) upstream.destroy();
    });
    request.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    routed: () => routed,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        agent.destroy();
        server.close(() => resolve());
      }),
  };
}
