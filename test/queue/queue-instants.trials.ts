import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WINDOWED_RESOURCES } from '../../src/schemas/resources.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { addDays, daysFrom } from '../../src/time/days.js';
import { type CliResult, startCli } from '../helpers/cli.js';
import { compareWithTruth } from '../helpers/completeness-oracle.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { jobTally, sourceKeys, startCluster } from '../helpers/queue-cluster.js';

/**
 * Time slices through the queue: a queued backfill (`backfill --queue`, two `worker` processes)
 * from three servers that cap every response at 30 items, newest first, on days of up to several
 * times the cap, each playing one reading of an ISO instant in startdate and enddate (SPEC-GAPS:
 * paging). A source's windows run in both workers (two in flight per source), so a day's slices
 * and the probe run beside other windows of their resource. Where instants are honoured the
 * warehouse must hold the truth whole, no day truncated; where they are ignored or refused, what
 * a whole-day reading reaches and every day above the cap flagged, as before time slices.
 */

/** A fixed calendar in the past: the simulator draws each day's items from its date. */
const TO = '2026-10-22';
const DAYS = 7;
const FROM = addDays(TO, -(DAYS - 1));
const CAP = 30;
/** A mean of 45 items a day of each resource: most days above the cap, some empty. */
const VOLUME = { feedbackPerDay: 45, surveyPerDay: 45, recordingsPerDay: 45, busyDayFeedback: 0 };
const READINGS = ['honoured', 'ignored', 'refused'] as const;
type Instants = (typeof READINGS)[number];
/** Process tests: tsx starts each CLI in 1-3 s, several at once on 2 shared CPUs. */
const PROCESS_TEST_MS = 120_000;

const dayOf = (item: { dt: string }) => item.dt.slice(0, 10);

describe('a queued backfill behind a cap of 30, newest first, under each reading of instants', () => {
  const sims = new Map<Instants, Simulator>();
  const keys = sourceKeys(READINGS.length);
  const sourceOf = (instants: Instants) => `s${READINGS.indexOf(instants) + 1}`;
  let t: TestDatabase;
  let backfill: CliResult;
  let workers: CliResult[];

  beforeAll(async () => {
    t = await createTestDatabase();
    for (const [i, instants] of READINGS.entries())
      sims.set(
        instants,
        await startSimulator({
          seed: 21,
          from: FROM,
          to: TO,
          apiKeys: [keys[i] as string],
          volume: VOLUME,
          cap: CAP,
          order: 'newest-first',
          instants,
          // Slow enough that windows of one resource overlap in both workers.
          latencyMs: 20,
        }),
      );
    const first = sims.get('honoured') as Simulator;
    const cluster = startCluster(t, first, {
      sources: READINGS.length,
      workers: 2,
      urls: READINGS.map((instants) => (sims.get(instants) as Simulator).url),
    });
    try {
      backfill = await startCli(['backfill', '--queue', '--from', FROM, '--to', TO], cluster.env).done;
    } finally {
      workers = await cluster.stop();
    }
  }, PROCESS_TEST_MS);

  afterAll(async () => {
    for (const sim of sims.values()) await sim.stop();
    await t?.drop();
  });

  it('the run ends ok, every window done once by the workers, which stop cleanly', async () => {
    expect(backfill.stderr).not.toMatch(/"level":"(error|fatal)"/);
    expect(backfill.code, backfill.stderr).toBe(0);
    expect(workers.map((w) => w.code)).toEqual([0, 0]);
    const tally = await jobTally(t);
    expect(tally.byState).toEqual({ completed: READINGS.length * WINDOWED_RESOURCES.length * DAYS });
    expect(tally.completedTwice).toEqual([]);
    // Both learned instants for themselves: each ran windows.
    const done = await t.db.selectFrom('queue_workers').select('windows_done').execute();
    expect(done.map((w) => w.windows_done > 0)).toEqual([true, true]);
  });

  it('every reading puts days above the cap in the backfill', () => {
    for (const instants of READINGS) {
      const truth = (sims.get(instants) as Simulator).truth();
      for (const resource of WINDOWED_RESOURCES) {
        const perDay = daysFrom(FROM, TO).map(
          (day) => truth[resource].filter((item) => dayOf(item) === day).length,
        );
        expect(Math.max(...perDay), `${instants} ${resource}`).toBeGreaterThan(2 * CAP);
      }
    }
  });

  it('instants honoured: the warehouse equals the truth, no day truncated, each window its whole day', async () => {
    const source = sourceOf('honoured');
    const truth = (sims.get('honoured') as Simulator).truth();
    const compared = await compareWithTruth(t, source, truth, { from: FROM, to: TO });
    for (const [resource, r] of Object.entries(compared)) {
      expect({
        resource,
        missing: r.expected - r.stored,
        days: r.trulyTruncated,
        flagged: r.flagged,
      }).toEqual({ resource, missing: 0, days: [], flagged: [] });
      expect(r.extra, resource).toBe(0);
      expect(r.misplaced, resource).toBe(0);
    }
    const windows = await t.db
      .selectFrom('sync_windows')
      .select(['resource', 'day', 'status', 'item_count'])
      .where('source_id', '=', source)
      .orderBy('resource')
      .orderBy('day')
      .execute();
    expect(windows.map((w) => `${w.resource} ${w.day}: ${w.status}, ${w.item_count} items`)).toEqual(
      windows.map(
        (w) =>
          `${w.resource} ${w.day}: done, ${truth[w.resource].filter((item) => dayOf(item) === w.day).length} items`,
      ),
    );
  });

  it.each(['ignored', 'refused'] as const)(
    'instants %s: what a whole-day reading reaches, every day above the cap flagged, as without slices',
    async (instants) => {
      const source = sourceOf(instants);
      const truth = (sims.get(instants) as Simulator).truth();
      const compared = await compareWithTruth(t, source, truth, { from: FROM, to: TO });
      const windows = await t.db
        .selectFrom('sync_windows')
        .select(['resource', 'day', 'item_count'])
        .where('source_id', '=', source)
        .execute();
      expect(windows).toHaveLength(WINDOWED_RESOURCES.length * DAYS);
      for (const resource of WINDOWED_RESOURCES) {
        const r = compared[resource];
        const count = (day: string) => truth[resource].filter((item) => dayOf(item) === day).length;
        const aboveCap = daysFrom(FROM, TO).filter((day) => count(day) > CAP);
        expect(r.missedFlags, resource).toEqual([]);
        expect(r.trulyTruncated, resource).toEqual(aboveCap);
        expect(r.extra, resource).toBe(0);
        expect(r.misplaced, resource).toBe(0);
        // The first 30 the server lists of each day, no more, no fewer.
        expect(r.stored, resource).toBe(
          daysFrom(FROM, TO).reduce((n, day) => n + Math.min(count(day), CAP), 0),
        );
        for (const w of windows.filter((w) => w.resource === resource))
          expect(w.item_count, `${resource} ${w.day}`).toBe(Math.min(count(w.day), CAP));
        // A whole day flagged too: a capped server never proves its bounds, so a day next to one
        // above the cap can look cut. Never one far from such a day.
        for (const day of r.falseAlarms)
          expect(
            [addDays(day, -1), addDays(day, 1)].some((near) => aboveCap.includes(near)),
            `${resource} ${day}`,
          ).toBe(true);
      }
      const readings = await t.db
        .selectFrom('server_readings')
        .select(['resource', 'instants'])
        .where('source_id', '=', source)
        .execute();
      expect(readings.map((r) => r.instants)).toEqual(WINDOWED_RESOURCES.map(() => instants));
    },
  );

  it('each reading of instants is stored as the workers found it', async () => {
    const readings = await t.db
      .selectFrom('server_readings')
      .select(['source_id', 'instants'])
      .where('source_id', '=', sourceOf('honoured'))
      .execute();
    expect(readings.map((r) => r.instants)).toEqual(WINDOWED_RESOURCES.map(() => 'honoured'));
  });
});
