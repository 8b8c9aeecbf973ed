import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as webhookRetention from '../../migrations/0011-webhook-retention.js';
import { replayDeliveries } from '../../src/webhooks/replay.js';
import { clearOldBodies } from '../../src/webhooks/retention.js';
import type { WebhookServer } from '../../src/webhooks/server.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import {
  capturingLogger,
  count,
  feedbackBody,
  listen,
  MAIN_URL,
  postJson,
  receiver,
} from './webhook-helpers.js';

/**
 * INSIGHTS_WEBHOOK_RETENTION_DAYS: stored bodies older than the retention are cleared,
 * their rows kept, so that a redelivery of a cleared body is still recognised as the stored one.
 */

const DAY = 86_400_000;

describe('retention of stored webhook bodies', () => {
  let t: TestDatabase;
  let app: WebhookServer;

  beforeAll(async () => {
    t = await createTestDatabase();
    app = receiver(t.pool);
  });
  afterAll(async () => {
    await app.close();
    await t.drop();
  });

  /** Delivers a body, then dates its first receipt `daysAgo` days back. */
  async function deliveredDaysAgo(body: unknown, daysAgo: number): Promise<number> {
    const response = await postJson(app, MAIN_URL, body);
    const id = response.json().event_id as number;
    await t.db
      .updateTable('webhook_events')
      .set({ received_at: new Date(Date.now() - daysAgo * DAY) })
      .where('id', '=', id)
      .execute();
    return id;
  }

  const bodies = () =>
    t.db
      .selectFrom('webhook_events')
      .select(['id', 'body', 'body_text', 'body_cleared_at', 'status', 'body_hash', 'delivery_count'])
      .orderBy('id')
      .execute();

  it('clears the bodies older than N days, keeps the recent ones and every row; a cleared body redelivered is still a duplicate', async () => {
    const oldApplied = feedbackBody({ id: 1, comment: 'an old comment' });
    const oldRejected = { ...feedbackBody({ id: 2 }), type: 'refund' };
    // A body jsonb cannot hold, kept as text: cleared too.
    const oldAsText = feedbackBody({ id: 3, comment: 'nul \u0000 inside' });
    const recent = feedbackBody({ id: 4 });
    const ids = {
      oldApplied: await deliveredDaysAgo(oldApplied, 40),
      oldRejected: await deliveredDaysAgo(oldRejected, 31),
      oldAsText: await deliveredDaysAgo(oldAsText, 45),
      recent: await deliveredDaysAgo(recent, 29),
    };
    const before = await bodies();

    expect(await clearOldBodies(t.pool, 30)).toBe(3);
    const after = await bodies();
    expect(after).toHaveLength(4);
    for (const row of after) {
      const was = before.find((b) => b.id === row.id);
      // The row, its key and its status stay.
      expect({ status: row.status, body_hash: row.body_hash }).toEqual({
        status: was?.status,
        body_hash: was?.body_hash,
      });
      if (row.id === ids.recent) expect(row).toMatchObject({ body: was?.body, body_cleared_at: null });
      else expect(row).toMatchObject({ body: null, body_text: null, body_cleared_at: expect.any(Date) });
    }
    // Nothing is left to clear: a second run clears nothing.
    expect(await clearOldBodies(t.pool, 30)).toBe(0);

    // Redeliveries of cleared bodies: the same answers as before, nothing applied twice, the body
    // not stored again.
    const feedbackRows = await count(t, 'feedback');
    const again = await postJson(app, MAIN_URL, oldApplied);
    expect(again.statusCode).toBe(200);
    expect(again.json()).toEqual({ status: 'applied', event_id: ids.oldApplied, duplicate: true });
    const rejectedAgain = await postJson(app, MAIN_URL, oldRejected);
    expect(rejectedAgain.statusCode).toBe(422);
    expect(rejectedAgain.json()).toMatchObject({ event_id: ids.oldRejected, duplicate: true });
    expect(await count(t, 'feedback')).toBe(feedbackRows);
    const redelivered = (await bodies()).find((row) => row.id === ids.oldApplied);
    expect(redelivered).toMatchObject({ body: null, body_text: null, delivery_count: 2 });

    // replay has nothing to re-apply for a cleared body: only the recent one is replayed.
    expect(await replayDeliveries(t.pool, t.db)).toMatchObject({ replayed: 1 });
  });

  it('serve clears at start and logs one line with the count', async () => {
    await sql`truncate webhook_events, feedback, survey_answers, visitors, sources cascade`.execute(t.db);
    await deliveredDaysAgo(feedbackBody({ id: 10 }), 8);
    await deliveredDaysAgo(feedbackBody({ id: 11 }), 1);
    const logs = capturingLogger();
    const serving = receiver(t.pool, { retentionDays: 7, logger: logs.logger });
    try {
      await listen(serving);
      await expect.poll(() => logs.lines().includes('old webhook bodies cleared')).toBe(true);
    } finally {
      await serving.close();
    }
    const lines = logs
      .lines()
      .split('\n')
      .filter((line) => line.includes('old webhook bodies'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines).toEqual([
      expect.objectContaining({ level: 30, msg: 'old webhook bodies cleared', cleared: 1, retentionDays: 7 }),
    ]);
    expect(
      await t.db
        .selectFrom('webhook_events')
        .select('body_cleared_at')
        .where('body_cleared_at', 'is not', null)
        .execute(),
    ).toHaveLength(1);
  });

  it('unset: nothing is cleared, however old', async () => {
    await sql`truncate webhook_events, feedback, survey_answers, visitors, sources cascade`.execute(t.db);
    await deliveredDaysAgo(feedbackBody({ id: 20 }), 3_000);
    const serving = receiver(t.pool);
    try {
      await listen(serving);
      expect((await postJson(serving, MAIN_URL, feedbackBody({ id: 21 }))).statusCode).toBe(200);
    } finally {
      await serving.close();
    }
    const cleared = await t.db
      .selectFrom('webhook_events')
      .select('id')
      .where('body_cleared_at', 'is not', null)
      .execute();
    expect(cleared).toHaveLength(0);
  });

  it('migration 0011 goes down with cleared bodies in the table (kept as JSON null) and up again', async () => {
    await deliveredDaysAgo(feedbackBody({ id: 30 }), 100);
    expect(await clearOldBodies(t.pool, 30)).toBeGreaterThan(0);
    const rolledBack = new Error('roll back');
    await expect(
      t.db.transaction().execute(async (trx) => {
        await webhookRetention.down(trx);
        const kept = await sql<{
          n: number;
        }>`select count(*)::int as n from webhook_events where body = 'null'::jsonb`.execute(trx);
        expect(kept.rows[0]?.n).toBeGreaterThan(0);
        await webhookRetention.up(trx);
        throw rolledBack;
      }),
    ).rejects.toBe(rolledBack);
  });
});
