/**
 * The analyst views leave out rows deleted on evidence (missing_upstream_since) and count rows
 * only marked absent once; the view missing_upstream lists what they leave out. Against the
 * simulator: one item of each windowed resource is deleted at the service, and two runs read its
 * day whole.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as missingUpstreamViews from '../../migrations/0028-missing-upstream-views.js';
import * as supersededByReject from '../../migrations/0038-superseded-by-reject.js';
import type { GroundTruth, Simulator } from '../../src/simulator/server.js';
import { startSimulator } from '../../src/simulator/server.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst } from '../helpers/sync-harness.js';

const FROM = '2026-03-01';
const TO = '2026-03-05';
const DAY = '2026-03-04';
const NOW = new Date('2026-03-06T05:00:00.000Z');

describe('rows the service no longer has, in the analyst views', () => {
  let t: TestDatabase;
  let sim: Simulator;
  let before: GroundTruth;
  const removed = { feedback: '', survey: '', recordings: '' };

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 1, from: FROM, to: TO });
    expect((await backfill()).status).toBe('ok');
    before = sim.truth();
    removed.feedback = sim.removeItem('feedback', DAY, 0);
    removed.survey = sim.removeItem('survey', DAY, 0);
    removed.recordings = sim.removeItem('recordings', DAY, 0);
  }, 60_000);
  afterAll(async () => {
    await sim?.stop();
    await t?.drop();
  });

  const backfill = () =>
    runAgainst(t, sim, { now: NOW, request: { trigger: 'backfill', range: { from: FROM, to: TO } } });
  const onDay = (items: readonly { dt: string }[]) => items.filter((i) => i.dt.startsWith(DAY)).length;
  const activity = () =>
    t.db
      .selectFrom('daily_activity')
      .select(['feedback_count', 'survey_answer_count', 'recording_count'])
      .where('day', '=', DAY)
      .executeTakeFirstOrThrow();
  // The simulator's keys join with ':', the warehouse's with '/'.
  const enrichedKeys = async () => {
    const feedback = await t.db.selectFrom('feedback_enriched').select(['id', 'feedback_id']).execute();
    const survey = await t.db.selectFrom('survey_answers_enriched').select(['id', 'question_id']).execute();
    return {
      feedback: feedback.map((r) => `${r.id}:${r.feedback_id}`),
      survey: survey.map((r) => `${r.id}:${r.question_id}`),
    };
  };

  it('one whole read lacking them marks them absent only: still counted and listed', async () => {
    expect((await backfill()).status).toBe('ok');
    expect(await activity()).toEqual({
      feedback_count: onDay(before.feedback),
      survey_answer_count: onDay(before.survey),
      recording_count: onDay(before.recordings),
    });
    const keys = await enrichedKeys();
    expect(keys.feedback).toContain(removed.feedback);
    expect(keys.survey).toContain(removed.survey);
    expect(await t.db.selectFrom('missing_upstream').selectAll().execute()).toEqual([]);
  });

  it('once marked missing upstream, daily_activity and the enriched views leave them out', async () => {
    expect((await backfill()).status).toBe('ok');
    const now = sim.truth();
    expect(onDay(now.feedback)).toBe(onDay(before.feedback) - 1);
    expect(await activity()).toEqual({
      feedback_count: onDay(now.feedback),
      survey_answer_count: onDay(now.survey),
      recording_count: onDay(now.recordings),
    });
    const keys = await enrichedKeys();
    expect(keys.feedback).not.toContain(removed.feedback);
    expect(keys.survey).not.toContain(removed.survey);
    expect(keys.feedback).toHaveLength(now.feedback.length);
    expect(keys.survey).toHaveLength(now.survey.length);
  });

  it('the rows stay in their tables, and missing_upstream lists them by source, resource and day', async () => {
    const listed = await t.db
      .selectFrom('missing_upstream')
      .select(['source_id', 'resource', 'item_key', 'day'])
      .select((eb) => eb('missing_upstream_since', 'is not', null).as('marked'))
      .orderBy('resource')
      .execute();
    expect(listed).toEqual([
      {
        source_id: 'main',
        resource: 'feedback',
        item_key: removed.feedback.replace(':', '/'),
        day: DAY,
        marked: true,
      },
      { source_id: 'main', resource: 'recordings', item_key: removed.recordings, day: DAY, marked: true },
      {
        source_id: 'main',
        resource: 'survey',
        item_key: removed.survey.replace(':', '/'),
        day: DAY,
        marked: true,
      },
    ]);
    const stored = await t.db
      .selectFrom('feedback')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .execute();
    expect(Number(stored[0]?.n)).toBe(sim.truth().feedback.length + 1);
  });

  it('down counts them again and drops missing_upstream; up leaves them out again, the comments as they were', async () => {
    const comment = () =>
      sql<{ c: string }>`select obj_description('daily_activity'::regclass, 'pg_class') as c`.execute(t.db);
    const commented = (await comment()).rows[0]?.c;
    expect(commented).toContain('missing_upstream_since');
    // Newest first, as a rollback goes: 0038 replaced these views after 0028.
    await supersededByReject.down(t.db);
    await missingUpstreamViews.down(t.db);
    expect(await activity()).toMatchObject({ feedback_count: onDay(before.feedback) });
    expect((await comment()).rows[0]?.c).not.toContain('missing_upstream_since');
    await expect(t.db.selectFrom('missing_upstream').selectAll().execute()).rejects.toThrow(/does not exist/);
    await missingUpstreamViews.up(t.db);
    await supersededByReject.up(t.db);
    expect(await activity()).toMatchObject({ feedback_count: onDay(sim.truth().feedback) });
    expect((await comment()).rows[0]?.c).toBe(commented);
  });
});
