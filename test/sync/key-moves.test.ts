/**
 * The version the API serves now wins. An item whose date the service corrects comes back with
 * its key on another day; the day it left no longer serves it. Whichever way it moved (earlier or
 * later), and whatever order the two days' windows load in, the warehouse ends with the version
 * served now, the left version kept in key_collisions as a move, and the run counts a move, not a
 * collision.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { WindowedResource } from '../../src/schemas/resources.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import type { RunResult } from '../../src/sync/outcomes.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst } from '../helpers/sync-harness.js';

const FROM = '2026-03-01';
const TO = '2026-03-05';
const NOW = new Date('2026-03-06T05:00:00.000Z');
const RESOURCES: WindowedResource[] = ['feedback', 'survey', 'recordings'];

describe('an item moved to another day', () => {
  let t: TestDatabase;
  let sim: Simulator;
  beforeEach(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 1, from: FROM, to: TO });
  });
  afterEach(async () => {
    await sim.stop();
    await t.drop();
  });

  const backfill = () =>
    runAgainst(t, sim, { now: NOW, request: { trigger: 'backfill', range: { from: FROM, to: TO } } });
  const sync = () => runAgainst(t, sim, { now: NOW, settings: { lookbackDays: 5 } });

  /** Every stored row as `key@dt`, per resource, and the same from the simulator's truth. */
  const stored = async () => ({
    feedback: (await t.db.selectFrom('feedback').select(['id', 'feedback_id', 'dt']).execute()).map(
      (r) => `${r.id}/${r.feedback_id}@${r.dt?.toISOString()}`,
    ),
    survey: (await t.db.selectFrom('survey_answers').select(['id', 'question_id', 'dt']).execute()).map(
      (r) => `${r.id}/${r.question_id}@${r.dt?.toISOString()}`,
    ),
    recordings: (await t.db.selectFrom('recordings').select(['id', 'dt']).execute()).map(
      (r) => `${r.id}@${r.dt?.toISOString()}`,
    ),
  });
  const truth = () => {
    const now = sim.truth();
    return {
      feedback: now.feedback.map((f) => `${f.id}/${f.feedback_id}@${f.dt}`),
      survey: now.survey.map((a) => `${a.id}/${a.question_id}@${a.dt}`),
      recordings: now.recordings.map((r) => `${r.id}@${r.dt}`),
    };
  };
  const sorted = (x: Record<string, string[]>) =>
    Object.fromEntries(Object.entries(x).map(([k, v]) => [k, [...v].sort()]));
  const counted = (run: RunResult, what: 'collisions' | 'moves') =>
    RESOURCES.reduce((n, r) => n + (run.summary.main?.[r]?.[what] ?? 0), 0);

  it.each([
    ['earlier', '2026-03-04', '2026-03-02'],
    ['later', '2026-03-02', '2026-03-04'],
  ])(
    'to an %s day: the served version holds the key through a sync and two backfills',
    async (_, from, to) => {
      expect((await backfill()).status).toBe('ok');
      const moves = RESOURCES.map((resource) => sim.moveItem(resource, from, 0, to));

      for (const run of [sync, backfill, backfill]) {
        const result = await run();
        expect(result.status).toBe('ok');
        expect(sorted(await stored())).toEqual(sorted(truth()));
        // A move is no collision: nothing counted as one.
        expect(counted(result, 'collisions')).toBe(0);
      }
      // The left versions are kept, as moves, once each.
      const kept = await t.db
        .selectFrom('key_collisions')
        .select(['resource', 'item_key', 'dt', 'reason'])
        .orderBy('resource')
        .execute();
      expect(
        kept.map((k) => [k.resource, k.item_key.replace('/', ':'), k.dt.toISOString(), k.reason]),
      ).toEqual(
        moves
          .map((m) => [m.resource, m.key, m.fromDt, 'moved'])
          .sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
      );
    },
  );

  it.each([
    ['earlier', 'new day first', '2026-03-04', '2026-03-02', ['2026-03-02', '2026-03-04']],
    ['earlier', 'old day first', '2026-03-04', '2026-03-02', ['2026-03-04', '2026-03-02']],
    ['later', 'new day first', '2026-03-02', '2026-03-04', ['2026-03-04', '2026-03-02']],
    ['later', 'old day first', '2026-03-02', '2026-03-04', ['2026-03-02', '2026-03-04']],
  ])(
    'to an %s day, with the %s: the served version holds the key once both days are read',
    async (_, _order, from, to, days) => {
      await backfill();
      const moved = sim.moveItem('recordings', from, 0, to);
      const results: RunResult[] = [];
      for (const day of days) {
        results.push(
          await runAgainst(t, sim, {
            now: NOW,
            request: { trigger: 'backfill', range: { from: day, to: day }, resources: ['recordings'] },
          }),
        );
      }
      // A run that reads only the new day cannot tell a move from a second item (a collision); the
      // run that reads the old day whole finds the move.
      const [first, second] = results as [RunResult, RunResult];
      expect(counted(first, 'moves')).toBe(0);
      expect(counted(second, 'moves')).toBe(1);
      expect(counted(second, 'collisions')).toBe(0);
      const kept = await t.db.selectFrom('key_collisions').select(['item_key', 'dt', 'reason']).execute();
      expect(kept.map((k) => [k.item_key, k.dt.toISOString(), k.reason])).toEqual([
        [moved.key, moved.fromDt, 'moved'],
      ]);
      const row = await t.db
        .selectFrom('recordings')
        .select(['dt', 'absent_since'])
        .where('id', '=', moved.key)
        .executeTakeFirst();
      expect(row?.dt.toISOString()).toBe(moved.toDt);
      expect(row?.absent_since).toBeNull();
      expect(sorted(await stored())).toEqual(sorted(truth()));
    },
  );

  it('counts a move once, in the run that saw it', async () => {
    await backfill();
    sim.moveItem('recordings', '2026-03-04', 0, '2026-03-01');
    const first = await sync();
    expect(counted(first, 'moves')).toBe(1);
    expect(counted(first, 'collisions')).toBe(0);
    const again = await sync();
    expect(counted(again, 'moves')).toBe(0);
  });
});
