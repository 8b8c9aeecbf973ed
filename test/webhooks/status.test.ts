import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderStatus } from '../../src/cli/status.js';
import { statusReport } from '../../src/status/status-report.js';
import type { WebhookServer } from '../../src/webhooks/server.js';
import { cliEnv, runCli } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { feedbackBody, MAIN_URL, OTHER_TOKEN, postJson, receiver, surveyBody } from './webhook-helpers.js';

describe('status: the webhook part and the reconciliation report', () => {
  let t: TestDatabase;
  let app: WebhookServer;
  const now = new Date();
  const today = now.toISOString().slice(0, 10);

  beforeAll(async () => {
    t = await createTestDatabase();
    app = receiver(t.pool, { trustedProxy: ['127.0.0.1'] });
    for (const id of [1, 2, 3])
      expect((await postJson(app, MAIN_URL, feedbackBody({ id }))).statusCode).toBe(200);
    expect((await postJson(app, MAIN_URL, surveyBody())).statusCode).toBe(200);
    expect((await postJson(app, MAIN_URL, feedbackBody({ id: 1 }))).statusCode).toBe(200);
    expect((await postJson(app, MAIN_URL, { type: 'refund' })).statusCode).toBe(422);
    const shop = await postJson(app, `/webhooks/shop/${OTHER_TOKEN}`, feedbackBody({ id: 9 }), {
      'x-forwarded-for': '10.1.0.9',
    });
    expect(shop.statusCode).toBe(200);
    // Two of main's rows arrived five days ago, and one delivery yesterday; the API confirmed one row since.
    await sql`update feedback set first_seen_at = now() - interval '5 days', webhook_received_at = now() - interval '5 days' where source_id = 'main' and id in (1, 2)`.execute(
      t.db,
    );
    await sql`update webhook_events set received_at = now() - interval '1 day' where body->>'id' = '3'`.execute(
      t.db,
    );
    await sql`update feedback set origin = 'both' where source_id = 'main' and id = 2`.execute(t.db);
  });
  afterAll(async () => {
    await app.close();
    await t.drop();
  });

  it('per source: distinct deliveries received today, rejected ones, webhook-only rows, and those unconfirmed after N days', async () => {
    const report = await statusReport(t.db, today, 5, { now, confirmDays: 2 });
    expect(report.webhooks).toEqual([
      {
        source: 'main',
        receivedToday: 4,
        rejected: 1,
        provisional: 3,
        unconfirmed: 1,
        oldestUnconfirmed: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
      },
      {
        source: 'shop',
        receivedToday: 1,
        rejected: 0,
        provisional: 1,
        unconfirmed: 0,
        oldestUnconfirmed: null,
      },
    ]);
    // Not unhealthy: webhook-only rows are what completes days the API truncates.
    expect(report.healthy).toBe(true);
    expect((await statusReport(t.db, today, 5, { now, confirmDays: 7 })).webhooks[0]?.unconfirmed).toBe(0);
  });

  it('prints a webhooks table after the runs; none when there is no webhook data', async () => {
    const text = renderStatus(await statusReport(t.db, today, 5, { now, confirmDays: 2 }));
    expect(text).toMatch(/webhooks:\n.*received today.*rejected.*webhook-only rows.*unconfirmed > 2 d/);
    expect(text).toMatch(/main\s+4\s+1\s+3\s+1 \(oldest /);
    const empty = await createTestDatabase();
    try {
      await sql`insert into sources (source_id, base_url) values ('x', 'http://x')`.execute(empty.db);
      expect(renderStatus(await statusReport(empty.db, today))).not.toContain('webhooks:');
    } finally {
      await empty.drop();
    }
  });

  it('the status command reads INSIGHTS_WEBHOOK_CONFIRM_DAYS', async () => {
    const env = cliEnv({ DATABASE_URL: t.url, INSIGHTS_WEBHOOK_CONFIRM_DAYS: '7' });
    const result = await runCli(['status', '--json'], env);
    expect(result.code, result.stderr).toBe(0);
    const report = JSON.parse(result.stdout) as {
      webhookConfirmDays: number;
      webhooks: { unconfirmed: number }[];
    };
    expect(report.webhookConfirmDays).toBe(7);
    expect(report.webhooks.map((w) => w.unconfirmed)).toEqual([0, 0]);
  });
});
