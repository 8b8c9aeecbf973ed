/**
 * A steady server's stored reading stays where its items put it, run after run. A reader that saw
 * few of a sparse resource's items stores a bound hours short of the server's (a queued worker's
 * evidence after a few days: the last recording of a day at 20:12, where the server's day ends at
 * midnight). A later run's items past it read as the server's day moving (a stored bound counts as
 * held), and its requests reach as much past the other end. That reach was stored as if an item
 * had placed it, so the next run took its own items past it for another move: the stored reading
 * wandered by hours a run, and the server's day read as starting before UTC's, then after it, on
 * a server that never changed. The reach is stored apart from the evidence, and goes once a run's
 * answers show the server serves past it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { statusReport } from '../../src/status/status-report.js';
import { addDays, type DayString } from '../../src/time/days.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst } from '../helpers/sync-harness.js';

const TODAY = '2026-12-05' as DayString;
const RANGE = { from: addDays(TODAY, -30), to: addDays(TODAY, -1) };
/** A recording 20:12 past midnight: the latest a thin reader saw, hours short of the server's end. */
const THIN_TAIL = 72_777_299;

describe("a steady server's stored reading of a sparse resource, stored hours short at one end", () => {
  let t: TestDatabase;
  let sim: Simulator;
  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ from: RANGE.from, to: RANGE.to, cap: 10_000, latencyMs: 0 });
  });
  afterAll(async () => {
    await sim?.stop();
    await t?.drop();
  });

  const backfill = (from: DayString) =>
    runAgainst(t, sim, {
      now: new Date(`${TODAY}T12:00:00Z`),
      request: { trigger: 'backfill', range: { from, to: RANGE.to }, resources: ['recordings'] },
    });
  const stored = () =>
    t.db
      .selectFrom('server_readings')
      .select(['head_ms', 'tail_ms', 'server_day', 'start_reach_ms', 'end_reach_ms'])
      .where('resource', '=', 'recordings')
      .executeTakeFirstOrThrow();

  it('is learned back by later runs, and never read as a server day moved off UTC', async () => {
    await backfill(RANGE.from);
    const learned = await stored();
    expect(learned).toMatchObject({ server_day: 'utc', start_reach_ms: null, end_reach_ms: null });
    await t.db
      .updateTable('server_readings')
      .set({ tail_ms: THIN_TAIL })
      .where('resource', '=', 'recordings')
      .execute();
    const runs: Awaited<ReturnType<typeof stored>>[] = [];
    const said: string[] = [];
    // Nightly-sized backfills between whole ones, as the queue benchmark's warm-ups run.
    for (const days of [3, 30, 6, 30, 12, 30]) {
      await backfill(addDays(TODAY, -days));
      runs.push(await stored());
      const report = await statusReport(t.db, TODAY);
      said.push(report.resources.find((r) => r.resource === 'recordings')?.reading?.summary ?? '');
    }
    for (const run of runs) {
      expect(run.server_day).not.toBe('early');
      expect(run.server_day).not.toBe('late');
      // The evidence is the items': none of its bounds is a reach a move took.
      expect(Number(run.head_ms)).toBeLessThanOrEqual(Number(learned.head_ms));
      expect(Number(run.tail_ms)).toBeGreaterThanOrEqual(THIN_TAIL);
    }
    // Back to what the items show once a whole backfill read them, and no reach kept past them.
    expect(runs.slice(3)).toEqual(runs.slice(3).map(() => learned));
    // Meanwhile `status` said why each day's request was wider than the reading needs.
    expect(said[1]).toContain('UTC days');
    expect(said[1]).toContain(
      "each day asked a day further back and a day further on since a run saw the server's day move",
    );
    expect(said.at(-1)).not.toContain('further');
  });
});
