import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SourceConfig } from '../../src/config/source-config.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import type { WebhookServer } from '../../src/webhooks/server.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst, simulatorSource } from '../helpers/sync-harness.js';
import { truthItems, warehouseItems } from '../helpers/warehouse-truth.js';
import { listen, receiver, TOKEN } from './webhook-helpers.js';

const FROM = '2026-03-01';
const TO = '2026-03-03';
const NOW = new Date('2026-03-04T05:00:00.000Z');

/** Every column of every feedback and survey row, with the row's physical version (xmin). */
async function snapshot(t: TestDatabase) {
  const feedback = await sql<Record<string, unknown>>`
    select xmin::text as version, * from feedback order by id, feedback_id`.execute(t.db);
  const survey = await sql<Record<string, unknown>>`
    select xmin::text as version, * from survey_answers order by id, question_id`.execute(t.db);
  const visitors = await sql<Record<string, unknown>>`
    select xmin::text as version, * from visitors order by id`.execute(t.db);
  return { feedback: feedback.rows, survey: survey.rows, visitors: visitors.rows };
}

async function origins(t: TestDatabase): Promise<Record<string, number>> {
  const rows = await sql<{ origin: string; n: number }>`
    select origin, count(*)::int as n from (
      select origin from feedback union all select origin from survey_answers) o
    group by origin`.execute(t.db);
  return Object.fromEntries(rows.rows.map((r) => [r.origin, r.n]));
}

describe('webhooks and the API sync write the same rows; the API is authoritative', () => {
  let sim: Simulator;

  beforeAll(async () => {
    sim = await startSimulator({ seed: 5, from: FROM, to: TO, cap: 4000 });
  });
  afterAll(async () => {
    await sim.stop();
  });

  /** A database, a receiver on a free port whose source `main` is the simulator, and the URL to post to. */
  async function setUp(): Promise<{ t: TestDatabase; app: WebhookServer; url: string }> {
    const t = await createTestDatabase();
    const source: SourceConfig = { ...simulatorSource(sim), webhookToken: TOKEN };
    const app = receiver(t.pool, { sources: [source] });
    const base = await listen(app);
    return { t, app, url: `${base}/webhooks/main/${TOKEN}` };
  }

  describe('webhook first, then the API sync', () => {
    let t: TestDatabase;
    let app: WebhookServer;
    let url: string;
    beforeAll(async () => {
      ({ t, app, url } = await setUp());
    });
    afterAll(async () => {
      await app.close();
      await t.drop();
    });

    it('a webhook alone gives provisional rows: origin webhook, dt, url and rating still null', async () => {
      const truth = sim.truth();
      const sent = await sim.sendWebhooks(url);
      expect(sent.sent).toBe(truth.feedback.length + truth.survey.length);
      expect(new Set(sent.statuses)).toEqual(new Set([200]));

      expect(await origins(t)).toEqual({ webhook: sent.sent });
      const incomplete = await sql<{ n: number }>`
        select count(*)::int as n from feedback
        where dt is null and url is null and rating is null and rating_text is null and comment is not null`.execute(
        t.db,
      );
      expect(incomplete.rows[0]?.n).toBe(truth.feedback.length);
      // The survey webhook's `answer` is the list endpoint's `comment`.
      const answers = await t.db
        .selectFrom('survey_answers')
        .select(['id', 'question_id', 'comment'])
        .execute();
      for (const item of truth.survey) {
        expect(answers).toContainEqual({ id: item.id, question_id: item.question_id, comment: item.comment });
      }
    });

    it('the API sync then overwrites and completes every row: origin both, equal to the API field by field', async () => {
      const result = await runAgainst(t, sim, { now: NOW });
      expect(result.status).toBe('ok');
      expect(await warehouseItems(t)).toEqual(truthItems(sim.truth()));
      expect(await origins(t)).toEqual({ both: sim.truth().feedback.length + sim.truth().survey.length });
      const incomplete = await sql<{ n: number }>`
        select count(*)::int as n from feedback where dt is null or url is null or rating is null or rating_text is null`.execute(
        t.db,
      );
      expect(incomplete.rows[0]?.n).toBe(0);
      const mismatches = await sql<{ n: number }>`
        select count(*)::int as n from feedback
        where comment <> raw->>'comment' or rating <> (raw->>'rating')::int or dt <> (raw->>'dt')::timestamptz`.execute(
        t.db,
      );
      expect(mismatches.rows[0]?.n).toBe(0);
    });

    it('a second sync and the same webhooks again rewrite nothing', async () => {
      const before = await snapshot(t);
      const again = await runAgainst(t, sim, {
        now: NOW,
        request: { trigger: 'backfill', range: { from: FROM, to: TO }, resources: ['feedback', 'survey'] },
      });
      expect(again.windows.every((w) => w.inserted === 0 && w.updated === 0)).toBe(true);
      const resent = await sim.sendWebhooks(url);
      expect(new Set(resent.statuses)).toEqual(new Set([200]));
      expect(await snapshot(t)).toEqual(before);
    });
  });

  describe('API sync first, then the webhook', () => {
    let t: TestDatabase;
    let app: WebhookServer;
    let url: string;
    beforeAll(async () => {
      ({ t, app, url } = await setUp());
    });
    afterAll(async () => {
      await app.close();
      await t.drop();
    });

    it('a late webhook changes no value the API filled; it only marks the row as seen by both', async () => {
      expect((await runAgainst(t, sim, { now: NOW })).status).toBe('ok');
      expect(Object.keys(await origins(t))).toEqual(['api']);
      const before = await snapshot(t);

      const sent = await sim.sendWebhooks(url);
      expect(new Set(sent.statuses)).toEqual(new Set([200]));

      const after = await snapshot(t);
      const strip = (rows: Record<string, unknown>[]) =>
        rows.map(({ version: _v, origin: _o, ...rest }) => rest);
      expect(strip(after.feedback)).toEqual(strip(before.feedback));
      expect(strip(after.survey)).toEqual(strip(before.survey));
      // Visitors the API loaded are not touched at all.
      expect(after.visitors).toEqual(before.visitors);
      expect(await origins(t)).toEqual({ both: sent.sent });
      expect(await warehouseItems(t)).toEqual(truthItems(sim.truth()));
    });

    it('a webhook whose content differs from the API row never reverts it', async () => {
      const item = sim.truth().feedback[0];
      if (item === undefined) throw new Error('the simulator served no feedback');
      const before = await t.db
        .selectFrom('feedback')
        .selectAll()
        .where('id', '=', item.id)
        .where('feedback_id', '=', item.feedback_id)
        .executeTakeFirstOrThrow();
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          id: item.id,
          feedback_id: item.feedback_id,
          type: 'feedback',
          question: 'edited question',
          comment: 'edited comment',
          session: 'other-session',
          screenshot: 'https://elsewhere.test/x.png',
          visitor: { ...item.visitor, name: 'Someone Else' },
        }),
      });
      expect(response.status).toBe(200);
      const after = await t.db
        .selectFrom('feedback')
        .selectAll()
        .where('id', '=', item.id)
        .where('feedback_id', '=', item.feedback_id)
        .executeTakeFirstOrThrow();
      expect(after).toEqual(before);
      const visitor = await t.db
        .selectFrom('visitors')
        .select('name')
        .where('id', '=', item.visitor.id)
        .executeTakeFirstOrThrow();
      expect(visitor.name).toBe(item.visitor.name);
    });

    it('the next API sync leaves the rows the webhook confirmed untouched', async () => {
      const before = await snapshot(t);
      const again = await runAgainst(t, sim, {
        now: NOW,
        request: { trigger: 'backfill', range: { from: FROM, to: TO }, resources: ['feedback', 'survey'] },
      });
      expect(again.status).toBe('ok');
      expect(again.windows.every((w) => w.inserted === 0 && w.updated === 0)).toBe(true);
      expect(await snapshot(t)).toEqual(before);
    });
  });
});
