import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMetricsServer } from '../../src/metrics/metrics-server.js';
import {
  createReceiverMetrics,
  DELIVERY_OUTCOMES,
  deliveryOutcome,
  recordBatch,
  recordDatabaseError,
  recordDelivery,
} from '../../src/metrics/receiver-metrics.js';
import { METRICS_CONTENT_TYPE, metricsText } from '../../src/metrics/registry.js';
import { checkExposition, samples } from './check-exposition.js';

describe("the webhook receiver's metrics", () => {
  it('maps each answer to one outcome, telling a full queue from an unavailable database', () => {
    const cases: [number, boolean, string][] = [
      [200, false, 'applied'],
      [422, false, 'rejected'],
      [404, false, 'not_found'],
      [403, false, 'forbidden'],
      [429, false, 'rate_limited'],
      [413, false, 'too_large'],
      [400, false, 'malformed'],
      [415, false, 'malformed'],
      [408, false, 'malformed'],
      [503, true, 'busy'],
      [503, false, 'unavailable'],
      [500, false, 'error'],
      [502, false, 'error'],
    ];
    for (const [status, queueFull, outcome] of cases)
      expect(deliveryOutcome(status, { queueFull }), `${status}`).toBe(outcome);
  });

  it('counts deliveries, latency, batch sizes and database errors under Prometheus names the exposition checks accept', async () => {
    const registry = new Registry();
    const metrics = createReceiverMetrics(registry);
    metrics.recordDelivery('applied', 0.004);
    metrics.recordDelivery('applied', 0.03);
    metrics.recordDelivery('rejected', 0.002);
    metrics.recordDelivery('unavailable', 10.2);
    metrics.recordBatch(1);
    metrics.recordBatch(37);
    metrics.recordDatabaseError('unavailable');
    const text = await registry.metrics();

    const check = await checkExposition(text);
    expect(check, check.output).toEqual({ code: 0, output: '' });

    const found = samples(text);
    const value = (name: string, labels: Record<string, string> = {}) =>
      found.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
        ?.value;
    expect(value('insights_sync_webhook_deliveries_total', { outcome: 'applied' })).toBe(2);
    expect(value('insights_sync_webhook_deliveries_total', { outcome: 'rejected' })).toBe(1);
    // Every outcome is there from the start, at 0.
    for (const outcome of DELIVERY_OUTCOMES)
      expect(value('insights_sync_webhook_deliveries_total', { outcome })).toBeGreaterThanOrEqual(0);
    expect(value('insights_sync_webhook_delivery_duration_seconds_count', { outcome: 'applied' })).toBe(2);
    expect(value('insights_sync_webhook_delivery_duration_seconds_sum', { outcome: 'applied' })).toBeCloseTo(
      0.034,
      9,
    );
    expect(
      value('insights_sync_webhook_delivery_duration_seconds_bucket', { outcome: 'applied', le: '0.005' }),
    ).toBe(1);
    expect(
      value('insights_sync_webhook_delivery_duration_seconds_bucket', { outcome: 'unavailable', le: '10' }),
    ).toBe(0);
    expect(value('insights_sync_webhook_batch_deliveries_count')).toBe(2);
    expect(value('insights_sync_webhook_batch_deliveries_sum')).toBe(38);
    expect(value('insights_sync_webhook_batch_deliveries_bucket', { le: '50' })).toBe(2);
    expect(value('insights_sync_webhook_database_errors_total', { outcome: 'unavailable' })).toBe(1);
    expect(value('insights_sync_webhook_database_errors_total', { outcome: 'data' })).toBe(0);
    // Only the allowed labels.
    for (const s of found)
      for (const label of Object.keys(s.labels)) expect(['outcome', 'le']).toContain(label);
  });

  it('the process-wide functions record into the process registry, which metricsText() exposes', async () => {
    // The process registry is shared by every test file this worker runs: compare with before.
    const first = samples(await metricsText());
    const before = first.find(
      (s) => s.name === 'insights_sync_webhook_deliveries_total' && s.labels.outcome === 'busy',
    )?.value;
    const dataErrorsBefore = first.find(
      (s) => s.name === 'insights_sync_webhook_database_errors_total' && s.labels.outcome === 'data',
    )?.value;
    recordDelivery('busy', 0.0001);
    recordBatch(3);
    recordDatabaseError('data');
    const text = await metricsText();
    const after = samples(text);
    expect(
      after.find((s) => s.name === 'insights_sync_webhook_deliveries_total' && s.labels.outcome === 'busy')
        ?.value,
    ).toBe((before ?? 0) + 1);
    expect(
      after.find(
        (s) => s.name === 'insights_sync_webhook_database_errors_total' && s.labels.outcome === 'data',
      )?.value,
    ).toBe((dataErrorsBefore ?? 0) + 1);
    const check = await checkExposition(text);
    expect(check, check.output).toEqual({ code: 0, output: '' });
  });

  describe('GET /metrics', () => {
    const registry = new Registry();
    let server: Awaited<ReturnType<typeof startMetricsServer>>;
    beforeAll(async () => {
      createReceiverMetrics(registry).recordDelivery('applied', 0.01);
      server = await startMetricsServer({ port: 0, host: '127.0.0.1', registry });
    });
    afterAll(() => server.close());

    it('answers the exposition text, 404 elsewhere and 405 for another method', async () => {
      const response = await fetch(server.url);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe(METRICS_CONTENT_TYPE);
      expect(METRICS_CONTENT_TYPE).toMatch(/^text\/plain; version=0\.0\.4/);
      const body = await response.text();
      expect(body).toBe(await registry.metrics());
      expect((await checkExposition(body)).code).toBe(0);
      expect((await fetch(server.url.replace('/metrics', '/'))).status).toBe(404);
      expect((await fetch(server.url, { method: 'POST' })).status).toBe(405);
    });
  });
});
