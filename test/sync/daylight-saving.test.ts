/**
 * A server whose day follows a time zone with daylight saving (SPEC-GAPS: the server's day may be
 * another time zone's, and a real zone's clock moves twice a year). Its days are not one fixed
 * offset from UTC: the day its clock goes forward lasts 23 hours, the day it goes back 25, and
 * every day after the change starts an hour earlier or later than the days before. To the tool,
 * a stored reading learned before the change is one the server no longer plays after it, without
 * any deploy: the change falls between two nights, or inside one backfill.
 *
 * Each case compares the warehouse with the simulator's ground truth, item by item: nothing
 * missing outside the days flagged truncated, nothing invented, every key at its latest version;
 * where the server honours instants, nothing missing and nothing flagged.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SourceConfig } from '../../src/config/source-config.js';
import { WINDOWED_RESOURCES } from '../../src/schemas/resources.js';
import { type Simulator, type SimulatorPatch, startSimulator } from '../../src/simulator/server.js';
import type { SyncRequest } from '../../src/sync/run-sync.js';
import { addDays, type DayString, daysFrom } from '../../src/time/days.js';
import { type Completeness, compareWithTruth } from '../helpers/completeness-oracle.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst, simulatorSource } from '../helpers/sync-harness.js';

/** Zones whose clock changes inside a stretch below, and the day it does (2026). */
const CHANGES = [
  { zone: 'Europe/Berlin', day: '2026-10-25', hours: 25 },
  { zone: 'America/New_York', day: '2026-11-01', hours: 25 },
  { zone: 'Europe/Berlin', day: '2026-03-29', hours: 23 },
  { zone: 'Australia/Sydney', day: '2026-04-05', hours: 25 },
  { zone: 'Australia/Sydney', day: '2026-10-04', hours: 23 },
] as const;

const serving = fc.record({
  change: fc.constantFrom(...CHANGES),
  startdate: fc.constantFrom('inclusive' as const, 'exclusive' as const),
  enddate: fc.constantFrom('inclusive' as const, 'exclusive' as const),
  order: fc.constantFrom('oldest-first' as const, 'newest-first' as const, 'random' as const),
  // 30 cuts every day of the volume below; 1000 none.
  cap: fc.constantFrom(30, 1000),
  instants: fc.constantFrom('refused' as const, 'ignored' as const, 'honoured' as const),
  seed: fc.integer({ min: 1, max: 100_000 }),
});
type Serving = typeof serving extends fc.Arbitrary<infer T> ? T : never;

const VOLUME = { feedbackPerDay: 12, surveyPerDay: 8, recordingsPerDay: 5, busyDayFeedback: 40 };

function describeCase(s: Serving): string {
  const { change, ...rest } = s;
  return `${change.zone} (${change.day}, ${change.hours} h) ${JSON.stringify(rest)}`;
}

function expectWhole(report: Record<string, Completeness>, s: Serving): void {
  // Not vacuous: the days compared hold items.
  expect(Object.values(report).reduce((sum, r) => sum + r.expected, 0)).toBeGreaterThan(0);
  for (const [resource, r] of Object.entries(report)) {
    const where = `${describeCase(s)} ${resource}`;
    expect(r.missedFlags, where).toEqual([]);
    expect(r.extra, where).toBe(0);
    expect(r.misplaced, where).toBe(0);
    if (s.instants === 'honoured') {
      expect(r.flagged, where).toEqual([]);
      expect(r.stored, where).toBe(r.expected);
    }
  }
}

/** 03:00 UTC on `day`: a nightly run's start. */
const nightOf = (day: DayString) => new Date(`${day}T03:00:00.000Z`);

describe("a server whose day follows a zone's clock, daylight saving included", () => {
  let t: TestDatabase;
  let cases = 0;

  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(async () => {
    await t.drop();
  });

  /** One run of the sync against `sim` as `source`, every window read. */
  async function read(sim: Simulator, source: SourceConfig, now: Date, request: Partial<SyncRequest>) {
    const run = await runAgainst(t, sim, {
      now,
      sources: [source],
      request: { ...request, resources: WINDOWED_RESOURCES },
    });
    expect(run.windows.filter((w) => w.status === 'failed').map((w) => w.error)).toEqual([]);
  }

  /** Plays `s` on a simulator holding `from`..`to` and two days around, then compares those days. */
  async function play(
    s: Serving,
    from: DayString,
    to: DayString,
    runs: (sim: Simulator, source: SourceConfig) => Promise<void>,
  ): Promise<void> {
    const { change, seed, ...rest } = s;
    const sim = await startSimulator({ seed, from: addDays(from, -2), to: addDays(to, 2), volume: VOLUME });
    try {
      const patch: SimulatorPatch = { ...rest, dayZone: change.zone };
      sim.setOptions(patch);
      cases += 1;
      const source = simulatorSource(sim, `case-${cases}`);
      await runs(sim, source);
      expectWhole(await compareWithTruth(t, source.name, sim.truth(), { from, to }), s);
    } finally {
      await sim.stop();
    }
  }

  it('a backfill across the change stores every item of the days it settles', async () => {
    await fc.assert(
      fc.asyncProperty(serving, async (s) => {
        const from = addDays(s.change.day, -5);
        const to = addDays(s.change.day, 5);
        await play(s, from, to, (sim, source) =>
          read(sim, source, nightOf(addDays(to, 3)), { trigger: 'backfill', range: { from, to } }),
        );
      }),
      { numRuns: 5, seed: 2026_1025, endOnFailure: true },
    );
  }, 120_000);

  it('nightly syncs from a reading stored before the change store every item after it', async () => {
    await fc.assert(
      fc.asyncProperty(serving, async (s) => {
        const from = addDays(s.change.day, -8);
        const to = addDays(s.change.day, 4);
        await play(s, from, to, async (sim, source) => {
          // The reading is learned and stored on the days before the change...
          const range = { from, to: addDays(s.change.day, -2) };
          await read(sim, source, nightOf(s.change.day), { trigger: 'backfill', range });
          // ...then every night reads its lookback from it, across the change and past it.
          for (const night of daysFrom(addDays(s.change.day, 1), addDays(to, 2)))
            await read(sim, source, nightOf(night), { trigger: 'sync' });
        });
      }),
      { numRuns: 4, seed: 2026_1101, endOnFailure: true },
    );
  }, 180_000);
});
