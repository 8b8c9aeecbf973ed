import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metricsText } from '../../src/metrics/registry.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { checkExposition, samples } from '../metrics/check-exposition.js';
import { feedbackBody, MAIN_URL, postJson, receiver } from './webhook-helpers.js';

/**
 * What `serve` received, in Prometheus's format: the registry its metrics
 * server (INSIGHTS_METRICS_PORT, test/reliability/security-surface.trials.ts) serves; never on the
 * webhook listener (test/webhooks/sockets.test.ts).
 */
describe("the webhook receiver's metrics", () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(async () => {
    await t.drop();
  });

  const delivered = (text: string, outcome: string) =>
    samples(text).find(
      (s) => s.name === 'insights_sync_webhook_deliveries_total' && s.labels.outcome === outcome,
    )?.value ?? 0;

  it('counts each answer by outcome and each stored batch; the exposition checks accept the text; no token or source name in it', async () => {
    const app = receiver(t.pool);
    try {
      const before = { body: await metricsText() };
      const applied0 = delivered(before.body, 'applied');
      const notFound0 = delivered(before.body, 'not_found');

      const ok = await postJson(app, MAIN_URL, feedbackBody({ id: 7001 }));
      expect(ok.statusCode).toBe(200);
      const wrong = await postJson(app, '/webhooks/main/not-the-token-at-all-0123456789', feedbackBody());
      expect(wrong.statusCode).toBe(404);

      const after = { body: await metricsText() };
      expect(delivered(after.body, 'applied')).toBe(applied0 + 1);
      expect(delivered(after.body, 'not_found')).toBe(notFound0 + 1);
      const batches = samples(after.body).find(
        (s) => s.name === 'insights_sync_webhook_batch_deliveries_count',
      );
      expect(batches?.value).toBeGreaterThanOrEqual(1);

      const check = await checkExposition(after.body);
      expect(check, check.output).toEqual({ code: 0, output: '' });
      // The receiver's own families; a run in the same process adds its per-source gauges, which
      // name sources on purpose.
      const receiverLines = after.body
        .split('\n')
        .filter((line) => line.includes('insights_sync_webhook_'))
        .join('\n');
      expect(receiverLines).toContain('insights_sync_webhook_deliveries_total');
      expect(after.body).not.toContain('CANARY');
      expect(receiverLines).not.toMatch(/\bmain\b/);
    } finally {
      await app.close();
    }
  });
});
