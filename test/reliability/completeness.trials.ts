import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WINDOWED_RESOURCES } from '../../src/schemas/resources.js';
import { type Simulator, type SimulatorPatch, startSimulator } from '../../src/simulator/server.js';
import { compareWithTruth } from '../helpers/completeness-oracle.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { countInstantRequests } from '../helpers/instant-requests.js';
import { runAgainst, simulatorSource } from '../helpers/sync-harness.js';

/**
 * The property: 200 random servers (every reading of bounds, order, caps, a maximum limit,
 * the server's day, reused ids and instants in the bounds, drawn together) over random data
 * sets, each a backfill of the day-windowed resources into a real PostgreSQL, compared item by
 * item with the simulator's ground truth. Nothing may be missing outside the flagged days, nothing
 * invented, every key held by its latest version; where the server honours instants, nothing
 * missing and nothing flagged at all.
 */
const RUNS = 200;
const FROM = '2026-05-01';
const TO = '2026-05-12';
const NIGHT = new Date('2026-05-14T03:00:00.000Z');

const server = fc.record({
  seed: fc.integer({ min: 1, max: 100_000 }),
  volume: fc.record({
    feedbackPerDay: fc.constantFrom(1, 8, 40),
    surveyPerDay: fc.constantFrom(1, 6, 30),
    recordingsPerDay: fc.constantFrom(1, 5, 20),
    busyDayFeedback: fc.constantFrom(50, 300, 1500),
  }),
  options: fc.record({
    startdate: fc.constantFrom('inclusive' as const, 'exclusive' as const),
    enddate: fc.constantFrom('inclusive' as const, 'exclusive' as const),
    order: fc.constantFrom('oldest-first' as const, 'newest-first' as const, 'random' as const),
    cap: fc.constantFrom(30, 100, 1000, 4000),
    caps: fc.record({ feedback: fc.constantFrom(undefined, 60, 500) }, { requiredKeys: [] }),
    maxLimit: fc.constantFrom(null, null, 300, 2000),
    dayOffsetMinutes: fc.constantFrom(0, 0, 0, -300, 330, -660, 600),
    reuseIds: fc.constantFrom(0, 0, 0.3),
    instants: fc.constantFrom('refused' as const, 'ignored' as const, 'honoured' as const),
  }),
});

describe('completeness on random servers and data sets', () => {
  let t: TestDatabase;
  const sims = new Map<string, Simulator>();
  /** Flags and false alarms on servers cutting UTC days, and on servers cutting another zone's. */
  const flags = { utc: { flagged: 0, falseAlarms: 0 }, shifted: { flagged: 0, falseAlarms: 0 } };
  let expected = 0;
  let stored = 0;
  /** Over the servers that honour instants: items expected and stored, days flagged. */
  const honoured = { servers: 0, expected: 0, stored: 0, flagged: 0 };

  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(async () => {
    for (const sim of sims.values()) await sim.stop();
    await t.drop();
    console.info(
      `completeness trials: ${RUNS} servers, ${stored} of ${expected} items stored; UTC days: ${flags.utc.flagged} days flagged, ${flags.utc.falseAlarms} false alarms; other time zones: ${flags.shifted.flagged} flagged, ${flags.shifted.falseAlarms} false alarms; instants honoured: ${honoured.servers} servers, ${honoured.stored} of ${honoured.expected} items stored, ${honoured.flagged} days flagged`,
    );
  });

  it(`${RUNS} random servers: no silent loss, no invented or misplaced version`, async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(server, async ({ seed, volume, options }) => {
        run += 1;
        // One simulator per data set (seed and volume); its serving options change per run.
        const dataKey = `${seed}/${JSON.stringify(volume)}`;
        let sim = sims.get(dataKey);
        if (sim === undefined) {
          sim = await startSimulator({ seed, from: FROM, to: TO, volume });
          sims.set(dataKey, sim);
        }
        const { caps, ...rest } = options;
        const patch: SimulatorPatch = {
          ...rest,
          caps: caps.feedback === undefined ? {} : { feedback: caps.feedback },
        };
        sim.setOptions(patch);
        const source = simulatorSource(sim, `trial-${run}`);
        const withInstants = new Map<string, number>();
        const result = await runAgainst(t, sim, {
          now: NIGHT,
          sources: [source],
          // The day windows only: the property is about them (compareWithTruth), and the snapshots
          // (tests, heatmaps), read whole and never cut by day, would only add their requests.
          request: { trigger: 'backfill', range: { from: FROM, to: TO }, resources: WINDOWED_RESOURCES },
          wrapClient: countInstantRequests(withInstants),
        });
        expect(result.windows.filter((w) => w.status === 'failed').map((w) => w.error)).toEqual([]);
        if (options.instants !== 'honoured')
          for (const [resource, n] of withInstants) expect(n, resource).toBeLessThanOrEqual(1);
        else honoured.servers += 1;
        const report = await compareWithTruth(t, source.name, sim.truth(), { from: FROM, to: TO });
        for (const [resource, r] of Object.entries(report)) {
          const where = `${JSON.stringify(options)} seed ${seed} ${resource}`;
          expect(r.missedFlags, where).toEqual([]);
          expect(r.extra, where).toBe(0);
          expect(r.misplaced, where).toBe(0);
          const tally = options.dayOffsetMinutes === 0 ? flags.utc : flags.shifted;
          tally.flagged += r.flagged.length;
          tally.falseAlarms += r.falseAlarms.length;
          expected += r.expected;
          stored += r.stored;
          if (options.instants === 'honoured') {
            expect(r.flagged, where).toEqual([]);
            expect(r.stored, where).toBe(r.expected);
            honoured.expected += r.expected;
            honoured.stored += r.stored;
            honoured.flagged += r.flagged.length;
          }
        }
      }),
      { numRuns: RUNS, seed: 11_2026, endOnFailure: true },
    );
    // A day exactly at the cap cannot be told from a cut one: flagging it is the safe side. Since
    // the servers draw instants too, the draw holds more such days. An empty day beside a cut one
    // that no request can prove empty (instants refused or ignored) is flagged too, never settled
    // on an answer nothing proved (the reading session). The windows' timing decides some: 16 of
    // 84, 17 of 96 and 23 of 92 flags in three runs of this seed on one machine, so the bound
    // leaves room above the worst seen; a tool that flagged every cut day's neighbours would pass
    // half its flags as false alarms.
    expect(flags.utc.falseAlarms).toBeLessThanOrEqual(Math.ceil(flags.utc.flagged * 0.3));
    // A server day straddles two UTC days: when it is cut, in an order that does not tell which
    // end, either day may miss items, and both are flagged.
    expect(flags.shifted.falseAlarms).toBeLessThanOrEqual(Math.ceil(flags.shifted.flagged * 0.4));
  }, 1_500_000);
});
