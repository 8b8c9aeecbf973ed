/**
 * Webhook rows count at once: a feedback item or survey answer only a webhook
 * has delivered has no dt (spec 6), so it counts, marked provisional, on the UTC day its delivery
 * was received; when the API loads its day window it counts on its dt's day instead, once.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as provisionalDays from '../../migrations/0016-provisional-days.js';
import type { SourceConfig } from '../../src/config/source-config.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { replayDeliveries } from '../../src/webhooks/replay.js';
import type { WebhookServer } from '../../src/webhooks/server.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst, simulatorSource } from '../helpers/sync-harness.js';
import { listen, receiver, TOKEN } from './webhook-helpers.js';

// Days long before the database's own today, so a receipt day is never one of the data's days.
const FROM = '2024-01-01';
const TO = '2024-01-03';
const NOW = new Date('2024-01-04T05:00:00.000Z');

describe('a webhook row has a provisional day until its day window loads it', () => {
  let sim: Simulator;
  let t: TestDatabase;
  let app: WebhookServer;
  let url: string;
  let today: string;

  const activity = () =>
    t.db
      .selectFrom('daily_activity')
      .select([
        'day',
        'feedback_count',
        'provisional_feedback_count',
        'survey_answer_count',
        'provisional_survey_answer_count',
      ])
      .where('source_id', '=', 'main')
      .orderBy('day')
      .execute();

  beforeAll(async () => {
    sim = await startSimulator({ seed: 5, from: FROM, to: TO });
    t = await createTestDatabase();
    const source: SourceConfig = { ...simulatorSource(sim), webhookToken: TOKEN };
    app = receiver(t.pool, { sources: [source] });
    url = `${await listen(app)}/webhooks/main/${TOKEN}`;
    today = (await sql<{ day: string }>`select (now() at time zone 'UTC')::date::text as day`.execute(t.db))
      .rows[0]?.day as string;
  });
  afterAll(async () => {
    await app?.close();
    await sim?.stop();
    await t?.drop();
  });

  it('a delivery counts at once in the daily views, on its receipt day, marked provisional', async () => {
    const truth = sim.truth();
    const sent = await sim.sendWebhooks(url);
    expect(new Set(sent.statuses)).toEqual(new Set([200]));

    expect(await activity()).toEqual([
      {
        day: today,
        feedback_count: truth.feedback.length,
        provisional_feedback_count: truth.feedback.length,
        survey_answer_count: truth.survey.length,
        provisional_survey_answer_count: truth.survey.length,
      },
    ]);
    const feedback = await t.db
      .selectFrom('feedback_enriched')
      .select(['day', 'is_provisional', 'dt'])
      .execute();
    expect(feedback).toHaveLength(truth.feedback.length);
    expect(feedback.every((f) => f.day === today && f.is_provisional === true && f.dt === null)).toBe(true);
    const survey = await t.db
      .selectFrom('survey_answers_enriched')
      .select(['day', 'is_provisional'])
      .execute();
    expect(survey.every((s) => s.day === today && s.is_provisional === true)).toBe(true);
    // The receipt time is the delivery's, as webhook_events holds it.
    const mismatched = await sql<{ n: number }>`
      select count(*)::int as n from feedback f
       where f.webhook_received_at is distinct from (
         select e.received_at from webhook_events e
          where e.type = 'feedback' and (e.body ->> 'id')::bigint = f.id
            and (e.body ->> 'feedback_id')::bigint = f.feedback_id)`.execute(t.db);
    expect(mismatched.rows[0]?.n).toBe(0);
  });

  it('the day windows then load the rows: each counts once, on its dt day, no longer provisional', async () => {
    expect((await runAgainst(t, sim, { now: NOW, settings: { startDate: FROM } })).status).toBe('ok');

    const truth = sim.truth();
    const perDay = new Map<string, { feedback: number; survey: number }>();
    const on = (dt: string) => {
      const entry = perDay.get(dt.slice(0, 10)) ?? { feedback: 0, survey: 0 };
      perDay.set(dt.slice(0, 10), entry);
      return entry;
    };
    for (const f of truth.feedback) on(f.dt).feedback += 1;
    for (const s of truth.survey) on(s.dt).survey += 1;
    expect(await activity()).toEqual(
      [...perDay.entries()]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([day, n]) => ({
          day,
          feedback_count: n.feedback,
          provisional_feedback_count: 0,
          survey_answer_count: n.survey,
          provisional_survey_answer_count: 0,
        })),
    );
    const provisional = await sql<{ n: number }>`
      select (select count(*) from feedback_enriched where is_provisional)
           + (select count(*) from survey_answers_enriched where is_provisional) as n`.execute(t.db);
    expect(Number(provisional.rows[0]?.n)).toBe(0);
    // The receipt time stays: when the webhook came first is still known.
    const received = await sql<{ n: number }>`
      select count(*)::int as n from feedback where origin = 'both' and webhook_received_at is not null`.execute(
      t.db,
    );
    expect(received.rows[0]?.n).toBe(truth.feedback.length);
  });

  it('a replayed delivery counts on the day it was received, not the day of the replay', async () => {
    const body = {
      id: 990001,
      feedback_id: 1,
      type: 'feedback',
      question: 'How was your visit?',
      comment: 'replayed',
      session: 's-9',
      screenshot: 'https://cdn.example.test/990001.png',
      visitor: sim.truth().feedback[0]?.visitor,
    };
    expect(
      (
        await fetch(url, {
          method: 'POST',
          body: JSON.stringify(body),
          headers: { 'content-type': 'application/json' },
        })
      ).status,
    ).toBe(200);
    // As if it had been received two days ago and then lost from the table (rejected, say).
    await sql`delete from feedback where id = 990001`.execute(t.db);
    await sql`update webhook_events set received_at = received_at - interval '2 days', status = 'rejected'
               where (body ->> 'id')::bigint = 990001`.execute(t.db);

    const result = await replayDeliveries(t.pool, t.db, { status: 'rejected' });

    expect(result.nowApplied).toBe(1);
    const row = await t.db
      .selectFrom('feedback_enriched')
      .select(['day', 'is_provisional'])
      .where('id', '=', 990001)
      .executeTakeFirst();
    const twoDaysAgo = (
      await sql<{
        day: string;
      }>`select ((now() - interval '2 days') at time zone 'UTC')::date::text as day`.execute(t.db)
    ).rows[0]?.day;
    expect(row).toEqual({ day: twoDaysAgo, is_provisional: true });
  });

  it('the migration goes down to the views as they were (rows without dt not counted) and up again', async () => {
    // Down drops the receipt times; up takes a webhook row's first_seen_at for it (the replayed
    // row's is the replay's): what the views then show, for the comparison.
    await sql`update feedback set webhook_received_at = first_seen_at where id = 990001`.execute(t.db);
    const before = await activity();
    const columns = async (view: string) =>
      (
        await sql<{ name: string }>`select attname as name from pg_attribute
          where attrelid = ${view}::regclass and attnum > 0 order by attnum`.execute(t.db)
      ).rows.map((r) => r.name);

    await provisionalDays.down(t.db);
    expect(await columns('daily_activity')).not.toContain('provisional_feedback_count');
    expect(await columns('feedback_enriched')).not.toContain('is_provisional');
    const provisional = await sql<{ n: number }>`
      select count(*)::int as n from feedback_enriched where id = 990001 and day is null`.execute(t.db);
    expect(provisional.rows[0]?.n).toBe(1);

    await provisionalDays.up(t.db);
    expect(await activity()).toEqual(before);
    expect(await columns('feedback_enriched')).toContain('is_provisional');
  });
});
