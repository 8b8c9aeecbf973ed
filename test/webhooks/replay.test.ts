import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bodyHash } from '../../src/webhooks/body-hash.js';
import { replayDeliveries } from '../../src/webhooks/replay.js';
import type { WebhookServer } from '../../src/webhooks/server.js';
import { cliEnv, runCli } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { count, feedbackBody, MAIN_URL, postJson, receiver, surveyBody } from './webhook-helpers.js';

describe('webhooks replay', () => {
  let t: TestDatabase;
  let app: WebhookServer;

  beforeAll(async () => {
    t = await createTestDatabase();
    app = receiver(t.pool);
    // Stored by this version: one applied, one rejected for good (unknown type), one kept as text.
    expect((await postJson(app, MAIN_URL, feedbackBody({ id: 1 }))).statusCode).toBe(200);
    expect((await postJson(app, MAIN_URL, { ...feedbackBody({ id: 2 }), type: 'refund' })).statusCode).toBe(
      422,
    );
    expect((await postJson(app, MAIN_URL, feedbackBody({ id: 3, comment: 'nul\u0000' }))).statusCode).toBe(
      422,
    );
    // Rejected by an earlier version whose rules were wrong, as it left the row: valid by today's rules.
    const fixed = surveyBody({ id: 4 });
    await t.db
      .insertInto('webhook_events')
      .values({
        source_id: 'main',
        body_hash: bodyHash(fixed),
        type: 'survey',
        status: 'rejected',
        error: 'answer: too long (an old rule)',
        body: JSON.stringify(fixed),
        received_at: '2026-01-15T10:00:00.000Z',
      })
      .execute();
  });
  afterAll(async () => {
    await app.close();
    await t.drop();
  });

  it('--status rejected applies what passes now, keeps the rest rejected with their error', async () => {
    const result = await replayDeliveries(t.pool, t.db, { status: 'rejected' });
    expect(result).toEqual({ replayed: 3, applied: 1, rejected: 2, nowApplied: 1, nowRejected: 0 });
    const events = await t.db
      .selectFrom('webhook_events')
      .select(['type', 'status', 'error', 'applied_at'])
      .orderBy('id')
      .execute();
    expect(events.map((e) => e.status)).toEqual(['applied', 'rejected', 'rejected', 'applied']);
    expect(events[3]).toMatchObject({ error: null, applied_at: expect.any(Date) });
    expect(events[1]?.error).toMatch(/^type: unknown event type/);
    expect(events[2]?.error).toMatch(/^comment: .*cannot store/);
    const answer = await t.db
      .selectFrom('survey_answers')
      .select(['id', 'comment', 'origin'])
      .executeTakeFirstOrThrow();
    expect(answer).toEqual({ id: 4, comment: 'A friend', origin: 'webhook' });
  });

  it('replaying everything again changes no row', async () => {
    const versions = async () =>
      (
        await sql<{
          v: string;
        }>`select xmin::text as v from feedback union all select xmin::text from survey_answers`.execute(t.db)
      ).rows;
    const before = await versions();
    const result = await replayDeliveries(t.pool, t.db);
    expect(result).toMatchObject({ replayed: 4, applied: 2, rejected: 2, nowApplied: 0, nowRejected: 0 });
    expect(await versions()).toEqual(before);
    expect(await count(t, 'feedback')).toBe(1);
  });

  it('--since and --source narrow what is replayed', async () => {
    expect(
      await replayDeliveries(t.pool, t.db, {
        since: new Date('2026-02-01T00:00:00.000Z'),
        status: 'applied',
      }),
    ).toMatchObject({
      replayed: 1,
    });
    expect(await replayDeliveries(t.pool, t.db, { source: 'shop' })).toMatchObject({ replayed: 0 });
  });

  it('as a command: prints the counts; a bad --since is one clear line', async () => {
    const env = cliEnv({ DATABASE_URL: t.url });
    const result = await runCli(['webhooks', 'replay', '--status', 'rejected', '--since', '2026-01-01'], env);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe(
      'replayed 2 deliveries: 0 applied, 2 rejected (0 rejected before and applied now, 0 applied before and rejected now)\n',
    );
    const bad = await runCli(['webhooks', 'replay', '--since', 'last week'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--since: expected a day YYYY-MM-DD or an ISO time');
  });
});
