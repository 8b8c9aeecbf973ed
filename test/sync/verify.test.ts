/**
 * Verify reads settled days again, beyond any lookback, and finds what changed at the server
 * since they were loaded: late items, edits, deletions, moves. It reports exactly those, per day
 * and resource, and afterwards the warehouse holds what the server serves.
 */

import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { VerifyProgress } from '../../src/ledger/read.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { verifyStatus } from '../../src/status/verify-status.js';
import { describeVerifyProgress } from '../../src/status/verify-text.js';
import type { SyncRequest } from '../../src/sync/run-sync.js';
import { type DayVerdict, foundShort, runVerify, type VerifyRequest } from '../../src/sync/verify.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst } from '../helpers/sync-harness.js';

const FROM = '2026-03-01';
const TO = '2026-03-10';
/** Ten days after the last day: a lookback of 3 never reads any day of the range again. */
const NOW = new Date('2026-03-20T05:00:00.000Z');
/** No day above the server's cap: every day can be read whole. */
const VOLUME = { feedbackPerDay: 8, surveyPerDay: 6, recordingsPerDay: 5, busyDayFeedback: 8 };

describe('verify', () => {
  let t: TestDatabase;
  let sim: Simulator;
  beforeEach(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 7, from: FROM, to: TO, volume: VOLUME });
  });
  afterEach(async () => {
    await sim.stop();
    await t.drop();
  });

  const backfill = () =>
    runAgainst(t, sim, { now: NOW, request: { trigger: 'backfill', range: { from: FROM, to: TO } } });
  const verify = (request: Partial<VerifyRequest> = {}) =>
    runVerify(
      {
        db: t.db,
        run: (sync: SyncRequest, onWindow) => runAgainst(t, sim, { now: NOW, request: sync, onWindow }),
      },
      { from: FROM, to: TO, ...request },
    );

  /** An item as key@dt and content, whether the warehouse's raw copy or the simulator's. */
  const line = (resource: 'feedback' | 'survey' | 'recordings', item: Record<string, unknown>) =>
    resource === 'feedback'
      ? `${item.id}/${item.feedback_id}@${item.dt} ${item.comment} ${item.rating}`
      : resource === 'survey'
        ? `${item.id}/${item.question_id}@${item.dt} ${item.comment}`
        : `${item.id}@${item.dt}`;
  /** The rows an analyst sees (missing upstream ones are kept, left out), as lines. */
  const served = async () => {
    const rows = async (resource: 'feedback' | 'survey' | 'recordings') =>
      (
        await t.db
          .selectFrom(resource === 'survey' ? 'survey_answers' : resource)
          .select(['raw'])
          .where('missing_upstream_since', 'is', null)
          .execute()
      )
        .map((r) => line(resource, r.raw as Record<string, unknown>))
        .sort();
    return {
      feedback: await rows('feedback'),
      survey: await rows('survey'),
      recordings: await rows('recordings'),
    };
  };
  const truth = () => {
    const all = sim.truth();
    const lines = (resource: 'feedback' | 'survey' | 'recordings') =>
      (all[resource] as unknown as Record<string, unknown>[]).map((i) => line(resource, i)).sort();
    return { feedback: lines('feedback'), survey: lines('survey'), recordings: lines('recordings') };
  };
  /** The nth day before the late days holding items of the resource. */
  const busyDay = (resource: 'feedback' | 'survey' | 'recordings', nth: number): string => {
    const days = [...new Set(sim.truth()[resource].map((i) => i.dt.slice(0, 10)))]
      .sort()
      .filter((d) => d < '2026-03-06');
    const day = days[nth];
    if (day === undefined) throw new Error(`fewer than ${nth + 1} days with ${resource}`);
    return day;
  };
  const differences = (days: readonly DayVerdict[]) =>
    days
      .filter((d) => d.lacked + d.changed + d.gone + d.moved > 0)
      .map(
        (d) =>
          `${d.resource} ${d.day}: lacked ${d.lacked}, changed ${d.changed}, gone ${d.gone}, moved ${d.moved}`,
      );

  /** Items per resource and day of the simulator's truth, as `resource day`. */
  const perDay = () => {
    const counts = new Map<string, number>();
    const all = sim.truth();
    for (const resource of ['feedback', 'survey', 'recordings'] as const)
      for (const item of all[resource]) {
        const key = `${resource} ${item.dt.slice(0, 10)}`;
        counts.set(key, (counts.get(key) ?? 0) + 1);
      }
    return counts;
  };

  it('finds the late items, edits, deletions and moves on old days, and leaves the warehouse as the server', async () => {
    expect((await backfill()).status).toBe('ok');
    expect((await runAgainst(t, sim, { now: NOW })).status).toBe('ok');
    const before = perDay();
    const advanced = sim.advance();
    const after = perDay();
    const removedFeedback = busyDay('feedback', 0);
    const removedRecording = busyDay('recordings', 1);
    sim.removeItem('feedback', removedFeedback, 0);
    sim.removeItem('recordings', removedRecording, 0);
    const moved = sim.moveItem('recordings', busyDay('recordings', 0), 0, '2026-03-06');
    // The nightly sync reads only its lookback: it sees none of it.
    expect((await runAgainst(t, sim, { now: NOW })).status).toBe('ok');
    expect(await served()).not.toEqual(truth());

    const result = await verify();
    expect(result.runs.map((r) => r.status)).toEqual(['ok', 'ok']);
    // Late items on the last days of the range, beyond the lookback: what each day gained.
    const expected = new Map<string, string>();
    const finding = (key: string, what: Partial<Record<'lacked' | 'changed' | 'gone' | 'moved', number>>) => {
      const [resource, day] = key.split(' ');
      const { lacked = 0, changed = 0, gone = 0, moved: m = 0 } = what;
      expected.set(key, `${resource} ${day}: lacked ${lacked}, changed ${changed}, gone ${gone}, moved ${m}`);
    };
    for (const [key, n] of after)
      if (n > (before.get(key) ?? 0)) finding(key, { lacked: n - (before.get(key) ?? 0) });
    const edited = new Set(
      sim
        .truth()
        .feedback.filter((f) => advanced.edited.some((e) => e.id === f.id && e.feedback_id === f.feedback_id))
        .map((f) => `feedback ${f.dt.slice(0, 10)}`),
    );
    for (const key of edited)
      finding(key, {
        changed: advanced.edited.filter((e) =>
          sim
            .truth()
            .feedback.some(
              (f) => f.id === e.id && f.feedback_id === e.feedback_id && key.endsWith(f.dt.slice(0, 10)),
            ),
        ).length,
        lacked: (after.get(key) ?? 0) - (before.get(key) ?? 0),
      });
    finding(`feedback ${removedFeedback}`, { gone: 1 });
    finding(`recordings ${removedRecording}`, { gone: 1 });
    const found = differences(result.days);
    // The move is counted once, by the window of the day it left or the day it came to, whichever
    // loaded second: both are read by the verify.
    const move = found.filter((line) => line.endsWith('moved 1'));
    expect(move).toHaveLength(1);
    expect([`recordings ${moved.fromDt.slice(0, 10)}`, 'recordings 2026-03-06']).toContain(
      move[0]?.split(':')[0],
    );
    expect(found.filter((line) => !line.endsWith('moved 1')).sort()).toEqual([...expected.values()].sort());
    expect(advanced.late.feedback + advanced.late.survey + advanced.late.recordings).toBe(
      result.days.reduce((n, d) => n + d.lacked, 0),
    );
    expect(await served()).toEqual(truth());

    // The ledger: every day of the range verified, with what was found.
    const ledger = await t.db
      .selectFrom('sync_windows')
      .select([
        'resource',
        'day',
        'last_verified_at',
        'last_verify_lacked',
        'last_verify_changed',
        'last_verify_gone',
        'last_verify_moved',
      ])
      .where('day', '>=', FROM)
      .where('day', '<=', TO)
      .execute();
    expect(ledger).toHaveLength(30);
    expect(ledger.every((w) => w.last_verified_at !== null)).toBe(true);
    const recorded = ledger
      .filter(
        (w) =>
          (w.last_verify_lacked ?? 0) +
            (w.last_verify_changed ?? 0) +
            (w.last_verify_gone ?? 0) +
            (w.last_verify_moved ?? 0) >
          0,
      )
      .map(
        (w) =>
          `${w.resource} ${w.day}: lacked ${w.last_verify_lacked}, changed ${w.last_verify_changed}, gone ${w.last_verify_gone}, moved ${w.last_verify_moved}`,
      );
    expect(recorded.sort()).toEqual([...found].sort());

    // Read again, nothing has changed: nothing found.
    const again = await verify();
    expect(differences(again.days)).toEqual([]);
    expect(again.runs).toHaveLength(1);
  });

  it('finds a day settled short, repairs it, and status names it', async () => {
    expect((await backfill()).status).toBe('ok');
    // What a load under a reading that went stale leaves (SPEC-GAPS, "a reading that changes"):
    // the ledger holds the day complete, its rows lack the items the narrowed requests missed.
    const day = busyDay('feedback', 2);
    const lost = await sql<{ n: number }>`
      with gone as (
        delete from feedback where dt >= ${`${day}T12:00:00Z`}::timestamptz and dt < ${`${day}T00:00:00Z`}::timestamptz + interval '1 day'
        returning 1)
      select count(*)::int as n from gone`.execute(t.db);
    const missing = lost.rows[0]?.n ?? 0;
    expect(missing).toBeGreaterThan(0);
    const ledger = await t.db
      .selectFrom('day_completeness')
      .select('status')
      .where('resource', '=', 'feedback')
      .where('day', '=', day)
      .executeTakeFirst();
    expect(ledger?.status).toBe('complete');

    const result = await verify({ resources: ['feedback'] });
    expect(differences(result.days)).toEqual([
      `feedback ${day}: lacked ${missing}, changed 0, gone 0, moved 0`,
    ]);
    expect(result.days.filter(foundShort).map((d) => d.day)).toEqual([day]);
    expect((await served()).feedback).toEqual(truth().feedback);

    const [progress] = await verifyStatus(t.db, new Date());
    expect(progress).toMatchObject({
      source: 'main',
      lacked: missing,
      short: [{ resource: 'feedback', day }],
    });
    expect(progress?.verifiedSince).toBe(10);
    expect(progress?.oldestUnverifiedDay).toBe(FROM);
    expect(describeVerifyProgress(progress as VerifyProgress)).toContain(`found short: feedback/${day}`);
    const view = await t.db
      .selectFrom('day_completeness')
      .select(['last_verified_at', 'last_verify_lacked', 'reopened_at'])
      .where('resource', '=', 'feedback')
      .where('day', '=', day)
      .executeTakeFirst();
    expect(view?.last_verified_at).not.toBeNull();
    expect(view?.last_verify_lacked).toBe(missing);
    expect(view?.reopened_at).toBeNull();
  });
});
