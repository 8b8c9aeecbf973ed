/**
 * Webhooks held against the API: a webhook-only item the API has not served within N days of its
 * delivery is reported, per source and resource, with the oldest delivery and the days to read
 * again; one the API served is not; a day whose deliveries outnumber the API's items is flagged.
 * The simulator's webhooks go through the receiver; their receipts are set to the days of the data
 * (the service sends a webhook when the item is received), and the clock is passed in.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderStatus } from '../../src/cli/status.js';
import type { SourceConfig } from '../../src/config/source-config.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { statusReport } from '../../src/status/status-report.js';
import { unconfirmedWebhookItems, webhookOutnumberedDays } from '../../src/status/unconfirmed-webhooks.js';
import type { WebhookServer } from '../../src/webhooks/server.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst, simulatorSource } from '../helpers/sync-harness.js';
import { feedbackBody, listen, postJson, receiver, TOKEN } from '../webhooks/webhook-helpers.js';

const FROM = '2024-01-01';
const TO = '2024-01-03';
const NIGHT = new Date('2024-01-04T05:00:00.000Z');
const DAY_MS = 86_400_000;
const CONFIRM_DAYS = 4;
/** Announced by a webhook on 2024-01-02 at noon; the API never serves it. */
const NEVER_SERVED = 990_001;
const DELIVERED = '2024-01-02T12:00:00.000Z';

describe('webhook-only items the API never serves', () => {
  let sim: Simulator;
  let t: TestDatabase;
  let app: WebhookServer;

  beforeAll(async () => {
    sim = await startSimulator({ seed: 5, from: FROM, to: TO });
    t = await createTestDatabase();
    const source: SourceConfig = { ...simulatorSource(sim), webhookToken: TOKEN };
    app = receiver(t.pool, { sources: [source] });
    const sent = await sim.sendWebhooks(`${await listen(app)}/webhooks/main/${TOKEN}`, {
      kinds: ['feedback'],
    });
    expect(new Set(sent.statuses)).toEqual(new Set([200]));
    const extra = await postJson(app, `/webhooks/main/${TOKEN}`, feedbackBody({ id: NEVER_SERVED }));
    expect(extra.statusCode).toBe(200);
    // Each delivery received when its item was; the one the API never serves at noon on 01-02.
    for (const table of ['webhook_events', 'feedback'] as const) {
      const column = table === 'webhook_events' ? 'received_at' : 'webhook_received_at';
      const id = table === 'webhook_events' ? sql`(body ->> 'id')::bigint` : sql`id`;
      await sql`update ${sql.table(table)} set ${sql.ref(column)} = ${DELIVERED}::timestamptz where ${id} = ${NEVER_SERVED}`.execute(
        t.db,
      );
    }
    for (const item of sim.truth().feedback) {
      await sql`update webhook_events set received_at = ${item.dt}::timestamptz
                 where (body ->> 'id')::bigint = ${item.id} and (body ->> 'feedback_id')::bigint = ${item.feedback_id}`.execute(
        t.db,
      );
      await sql`update feedback set webhook_received_at = ${item.dt}::timestamptz
                 where id = ${item.id} and feedback_id = ${item.feedback_id}`.execute(t.db);
    }
    expect((await runAgainst(t, sim, { now: NIGHT, settings: { startDate: FROM } })).status).toBe('ok');
  });
  afterAll(async () => {
    await app?.close();
    await sim?.stop();
    await t?.drop();
  });

  const olderThan = (now: Date) => new Date(now.getTime() - CONFIRM_DAYS * DAY_MS);

  it('is not reported while fewer than N days have passed since its delivery', async () => {
    const now = new Date(Date.parse(DELIVERED) + CONFIRM_DAYS * DAY_MS - 1);
    expect(await unconfirmedWebhookItems(t.db, { olderThan: olderThan(now) })).toEqual([]);
  });

  it('is reported N days after its delivery, alone: every item the API served is confirmed', async () => {
    const now = new Date(Date.parse(DELIVERED) + CONFIRM_DAYS * DAY_MS + 1);
    const served = await t.db
      .selectFrom('feedback')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('origin', '=', 'both')
      .executeTakeFirstOrThrow();
    expect(Number(served.n)).toBe(sim.truth().feedback.length);
    expect(await unconfirmedWebhookItems(t.db, { olderThan: olderThan(now) })).toEqual([
      { source: 'main', resource: 'feedback', count: 1, oldestReceivedAt: DELIVERED, days: ['2024-01-02'] },
    ]);
    expect(await unconfirmedWebhookItems(t.db, { sourceId: 'other', olderThan: olderThan(now) })).toEqual([]);
  });

  it('flags the day whose deliveries outnumber the API items, and no other day', async () => {
    const now = new Date('2024-01-09T00:00:00.000Z');
    const apiItems = sim.truth().feedback.filter((item) => item.dt.startsWith('2024-01-02')).length;
    expect(await webhookOutnumberedDays(t.db, { olderThan: olderThan(now) })).toEqual([
      { source: 'main', resource: 'feedback', day: '2024-01-02', deliveries: apiItems + 1, apiItems },
    ]);
    // A day is judged only once the N days have passed since it ended.
    expect(await webhookOutnumberedDays(t.db, { olderThan: new Date('2024-01-02T23:00:00.000Z') })).toEqual(
      [],
    );
  });

  it('status reports both with the next step: read the days again, then ask the service', async () => {
    const now = new Date('2024-01-09T00:00:00.000Z');
    const report = await statusReport(t.db, '2024-01-09', 5, { now, confirmDays: CONFIRM_DAYS });
    expect(report.webhookUnconfirmed?.map((u) => [u.source, u.resource, u.count])).toEqual([
      ['main', 'feedback', 1],
    ]);
    expect(report.webhooks[0]?.unconfirmed).toBe(1);
    expect(report.webhookOutnumberedDays?.map((d) => d.day)).toEqual(['2024-01-02']);
    // Reported, not a reason for attention (exit 1): the next step is the operator's to take.
    expect(JSON.stringify(report.attention)).not.toMatch(/webhook/i);
    const text = renderStatus(report);
    expect(text).toContain(
      'main feedback: 1 webhook-only item the API has not served within 4 d of delivery (oldest received 2024-01-02T12:00:00.000Z; delivered on 2024-01-02). Next: insights-sync backfill --from 2024-01-01 --to 2024-01-02 --source main --resources feedback; if the API still does not serve them, ask the service',
    );
    expect(text).toMatch(
      /main feedback 2024-01-02: \d+ webhook deliveries, \d+ items from the API\. Next: insights-sync backfill --from 2024-01-02 --to 2024-01-02 --source main --resources feedback/,
    );
  });
});
