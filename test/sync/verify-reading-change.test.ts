/**
 * A warehouse loaded under a server reading that later changed (SPEC-GAPS, "a reading that
 * changes", between runs, as test/sync/reading-between-runs.test.ts plays it): a capped server is
 * backfilled, restarted with an exclusive end bound, and older days are backfilled under the new
 * reading. A verify of every day afterwards asks the server again under the reading it holds now:
 * whatever it finds, the warehouse then holds every item of every day, or flags the day.
 */
import { describe, expect, it } from 'vitest';
import { WINDOWED_RESOURCES } from '../../src/schemas/resources.js';
import { runVerify } from '../../src/sync/verify.js';
import { compareWithTruth } from '../helpers/completeness-oracle.js';
import { createTestDatabase } from '../helpers/database.js';
import {
  backfillAcrossReadingChange,
  NIGHT,
  OLDER_FROM,
  startCappedSimulator,
  TO,
  useReadingChangeScene,
} from '../helpers/reading-change.js';
import { runAgainst } from '../helpers/sync-harness.js';

describe('verify of a warehouse loaded under a reading that changed', () => {
  const scene = useReadingChangeScene();

  it('finds what the loads missed, if anything, and leaves no day short and unflagged', async () => {
    const { recent, older } = await backfillAcrossReadingChange(scene);
    expect(recent.status).toBe('ok');
    expect(older.status).toBe('ok');
    const { t, sim } = scene;

    sim.resetStats();
    const result = await runVerify(
      { db: t.db, run: (sync, onWindow) => runAgainst(t, sim, { now: NIGHT, request: sync, onWindow }) },
      { from: OLDER_FROM, to: TO },
    );
    expect(result.runs.every((r) => r.status === 'ok')).toBe(true);
    const found = result.days.filter((d) => d.lacked + d.changed + d.gone + d.moved > 0);
    const totals = found.reduce(
      (n, d) => ({
        lacked: n.lacked + d.lacked,
        changed: n.changed + d.changed,
        gone: n.gone + d.gone,
        moved: n.moved + d.moved,
      }),
      { lacked: 0, changed: 0, gone: 0, moved: 0 },
    );
    console.log(
      `verify after a reading change: ${result.days.length} windows, ${sim.stats().requests} requests, found ${JSON.stringify(totals)} on ${found.length} windows: ${found
        .map((d) => `${d.resource}/${d.day} +${d.lacked}`)
        .join(', ')}`,
    );
    // Nothing the server serves was ever stored wrong: a verify finds no change, no absence, no move.
    expect({ changed: totals.changed, gone: totals.gone, moved: totals.moved }).toEqual({
      changed: 0,
      gone: 0,
      moved: 0,
    });
    const after = await compareWithTruth(t, 'main', sim.truth(), { from: OLDER_FROM, to: TO });
    for (const resource of WINDOWED_RESOURCES) {
      expect(after[resource].missedFlags, resource).toEqual([]);
      expect(after[resource].extra, resource).toBe(0);
    }
  }, 120_000);

  it('a verify under a reading that changed since the load marks nothing absent and finds nothing', async () => {
    const t2 = await createTestDatabase();
    const sim2 = await startCappedSimulator(2040);
    try {
      const loaded = await runAgainst(t2, sim2, {
        now: NIGHT,
        request: { trigger: 'backfill', range: { from: OLDER_FROM, to: TO } },
      });
      expect(loaded.status).toBe('ok');
      // The server is redeployed: (D, D) now answers nothing, the reading the warehouse learned is stale.
      sim2.setOptions({ enddate: 'exclusive' });
      const result = await runVerify(
        { db: t2.db, run: (sync, onWindow) => runAgainst(t2, sim2, { now: NIGHT, request: sync, onWindow }) },
        { from: OLDER_FROM, to: TO },
      );
      expect(result.runs.every((r) => r.status === 'ok')).toBe(true);
      expect(result.days.filter((d) => d.lacked + d.changed + d.gone + d.moved > 0)).toEqual([]);
      const absent = await t2.db
        .selectFrom('feedback')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('absent_since', 'is not', null)
        .executeTakeFirst();
      expect(Number(absent?.n)).toBe(0);
    } finally {
      await sim2.stop();
      await t2.drop();
    }
  }, 120_000);
});
