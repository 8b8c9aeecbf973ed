import http from 'node:http';
import type { AddressInfo } from 'node:net';
import autocannon from 'autocannon';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { latencyRecorder, summarizeLatencies, timed } from '../../bench/latency.js';

/**
 * The webhook benchmark's latencies are timed by the benchmark, not by autocannon: `serve` closes a
 * kept-alive socket after a number of answers, and autocannon's own figures then span several
 * requests. Played here by a server that answers after DELAY_MS and closes every socket after
 * CLOSE_AFTER answers, as `serve` does after 1,000: after every other one, so that the closes come
 * often however few requests a loaded machine answers in the second (after every tenth, a CI run
 * answered too few for autocannon's spans to show: 1.38 times the connections' time, not 1.5).
 */
const DELAY_MS = 3;
const CLOSE_AFTER = 2;
const CONNECTIONS = 4;

describe('latencies of a load whose server closes kept-alive sockets', () => {
  let server: http.Server;
  let url: string;

  beforeAll(async () => {
    const served = new WeakMap<object, number>();
    server = http.createServer((request, response) => {
      const count = (served.get(request.socket) ?? 0) + 1;
      served.set(request.socket, count);
      if (count >= CLOSE_AFTER) response.setHeader('connection', 'close');
      request.resume();
      request.on('end', () => setTimeout(() => response.end('ok'), DELAY_MS));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('times each answered request once, no shorter than the server takes, one in flight a connection', async () => {
    const recorder = latencyRecorder();
    const result = await autocannon({
      url,
      connections: CONNECTIONS,
      duration: 1,
      requests: [timed(recorder, { method: 'POST', path: '/', setupRequest: (r) => ({ ...r, body: '{}' }) })],
    });
    const ours = recorder.summary();

    expect(result['2xx']).toBeGreaterThan(10 * CONNECTIONS);
    // Each connection's first request may be set up before the recorder is asked.
    expect(ours.count).toBeGreaterThanOrEqual(result['2xx'] - CONNECTIONS);
    expect(ours.count).toBeLessThanOrEqual(result['2xx']);
    expect(summarizeLatencies([]).count).toBe(0);
    expect(ours.p50Ms).toBeGreaterThanOrEqual(DELAY_MS);
    // At most one request in flight a connection: the latencies fit in the connections' time.
    expect(ours.totalMs).toBeLessThanOrEqual(CONNECTIONS * result.duration * 1000 * 1.02);
    // Why autocannon's own are not used: after a close each spans more than one request, and
    // together they exceed what the connections could hold.
    const theirsTotalMs = result.latency.mean * result['2xx'];
    expect(theirsTotalMs).toBeGreaterThan(CONNECTIONS * result.duration * 1000 * 1.5);
  });
});

describe('summarizeLatencies', () => {
  it('gives the mean and nearest-rank percentiles', () => {
    const latencies = Array.from({ length: 100 }, (_, i) => i + 1).reverse();
    expect(summarizeLatencies(latencies)).toEqual({
      count: 100,
      meanMs: 50.5,
      p50Ms: 50,
      p99Ms: 99,
      totalMs: 5050,
    });
    expect(summarizeLatencies([7]).p99Ms).toBe(7);
  });
});
