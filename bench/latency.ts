/**
 * The latency of each request as its sender saw it, timed here rather than by autocannon.
 *
 * autocannon (8.0) times a request from an entry it queues per connection when it writes the
 * request, and ends the timing of the OLDEST entry at each response. When the server closes a
 * kept-alive socket after an answer (`serve` does after 1,000 requests, so that no connection
 * lives forever: src/webhooks/http-server.ts), autocannon has already written the next request on
 * it: that request is never answered, autocannon connects again without emptying its queue, and
 * from then on every response ends the timing of a request written one round earlier. After k
 * closes on a connection its figures span k + 1 requests: at 32 connections for 30 s they were
 * three times the real latencies (mean 17.1 ms where 32 connections at 5,689 deliveries/s allow
 * 5.6: each connection has one request in flight at a time, so the mean is connections / rate).
 *
 * Here a request is timed from the moment autocannon asks for its body (`setupRequest`, called
 * just before it is written) to its answer (`onResponse`), on the connection's own context: one
 * request in flight per connection, so the context holds the start of the one being answered.
 */
import type autocannon from 'autocannon';

export interface LatencyContext {
  /** performance.now() when the request in flight on this connection was set up. */
  sentAt?: number;
}

export interface LatencySummary {
  count: number;
  meanMs: number;
  p50Ms: number;
  p99Ms: number;
  /** All latencies added up: at most connections x the phase's duration. */
  totalMs: number;
}

export interface LatencyRecorder {
  /** Call from setupRequest. */
  sent(context: LatencyContext): void;
  /** Call from onResponse. */
  answered(context: LatencyContext): void;
  summary(): LatencySummary;
}

export function latencyRecorder(): LatencyRecorder {
  const latencies: number[] = [];
  return {
    sent(context) {
      context.sentAt = performance.now();
    },
    answered(context) {
      if (context.sentAt === undefined) return;
      latencies.push(performance.now() - context.sentAt);
      context.sentAt = undefined;
    },
    summary: () => summarizeLatencies(latencies),
  };
}

/** Mean and nearest-rank percentiles (the smallest latency at or above which the share lies). */
export function summarizeLatencies(latencies: readonly number[]): LatencySummary {
  const sorted = [...latencies].sort((a, b) => a - b);
  const totalMs = sorted.reduce((sum, ms) => sum + ms, 0);
  const rank = (share: number) => sorted[Math.max(0, Math.ceil(share * sorted.length) - 1)] ?? Number.NaN;
  return {
    count: sorted.length,
    meanMs: sorted.length === 0 ? Number.NaN : totalMs / sorted.length,
    p50Ms: rank(0.5),
    p99Ms: rank(0.99),
    totalMs,
  };
}

export interface PlainRequest<C extends LatencyContext> {
  method: 'GET' | 'POST';
  path: string;
  headers?: Record<string, string>;
  setupRequest?: (request: autocannon.Request, context: C) => autocannon.Request;
  onResponse?: (status: number, body: string, context: C) => void;
}

/** `request` for autocannon's `requests`, each one timed by `recorder`. */
export function timed<C extends LatencyContext>(
  recorder: LatencyRecorder,
  request: PlainRequest<C>,
): autocannon.Request {
  const { setupRequest, onResponse } = request;
  return {
    ...request,
    // autocannon types the connection's context as a bare object, which is what it starts as.
    setupRequest: (req: autocannon.Request, context: object) => {
      const prepared = setupRequest === undefined ? req : setupRequest(req, context as C);
      recorder.sent(context as C);
      return prepared;
    },
    onResponse: (status: number, body: string, context: object) => {
      recorder.answered(context as C);
      onResponse?.(status, body, context as C);
    },
  };
}
