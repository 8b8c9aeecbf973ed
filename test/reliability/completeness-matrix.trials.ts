import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Simulator, type SimulatorPatch, startSimulator } from '../../src/simulator/server.js';
import { statusReport } from '../../src/status/status-report.js';
import { type Completeness, compareWithTruth } from '../helpers/completeness-oracle.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { countInstantRequests } from '../helpers/instant-requests.js';
import { runAgainst, simulatorSource } from '../helpers/sync-harness.js';

/**
 * The proof: under every reading of the spec's gaps the warehouse holds every item the
 * server can serve, and every day it cannot serve whole is flagged. 14 days of data; the 10th
 * (2026-03-10) is the busy day of 1,500 feedback items. Each case backfills the first week, then
 * a nightly sync (the day after the data) takes the rest and re-reads its lookback.
 */
const FROM = '2026-03-01';
const TO = '2026-03-14';
const BACKFILL_TO = '2026-03-07';
const NIGHT = new Date('2026-03-15T03:00:00.000Z');

/** Silent caps against the client's first limit of 1,000 (INSIGHTS_LIMIT) and ceiling of 4,000. */
const CAP_POSITIONS = { below: 100, at: 1000, above: 4000 } as const;

interface Case {
  name: string;
  options: SimulatorPatch;
}

const matrix: Case[] = [];
for (const startdate of ['inclusive', 'exclusive'] as const)
  for (const enddate of ['inclusive', 'exclusive'] as const)
    for (const order of ['oldest-first', 'newest-first', 'random'] as const)
      for (const [position, cap] of Object.entries(CAP_POSITIONS))
        matrix.push({
          name: `start ${startdate}, end ${enddate}, ${order}, cap ${position} the limit (${cap})`,
          options: { startdate, enddate, order, cap },
        });

// Instants in the bounds (the paging gap): honoured at every inclusivity and order, a day above the
// cap is read in time slices and nothing is flagged; ignored or refused, as above.
for (const startdate of ['inclusive', 'exclusive'] as const)
  for (const enddate of ['inclusive', 'exclusive'] as const)
    for (const order of ['oldest-first', 'newest-first', 'random'] as const)
      matrix.push({
        name: `instants honoured, start ${startdate}, end ${enddate}, ${order}, cap 100`,
        options: { startdate, enddate, order, cap: 100, instants: 'honoured' },
      });
for (const instants of ['ignored', 'refused'] as const)
  for (const order of ['oldest-first', 'newest-first', 'random'] as const)
    matrix.push({
      name: `instants ${instants}, start exclusive, end inclusive, ${order}, cap 100`,
      options: { startdate: 'exclusive', order, cap: 100, instants },
    });

const extras: Case[] = [
  {
    name: 'instants honoured, server day UTC-5 (late), exclusive bounds, newest first, cap 30',
    options: {
      dayOffsetMinutes: -300,
      startdate: 'exclusive',
      enddate: 'exclusive',
      order: 'newest-first',
      cap: 30,
      instants: 'honoured',
    },
  },
  {
    name: 'instants honoured, HTTP 400 above a maximum limit of 50, cap 4000',
    options: { maxLimit: 50, cap: 4000, instants: 'honoured' },
  },
  {
    name: 'server day UTC-5 (late), inclusive bounds, newest first, cap 100',
    options: { dayOffsetMinutes: -300, order: 'newest-first', cap: 100 },
  },
  {
    name: 'server day UTC+5:30 (early), exclusive bounds, random order',
    options: {
      dayOffsetMinutes: 330,
      startdate: 'exclusive',
      enddate: 'exclusive',
      order: 'random',
      cap: 4000,
    },
  },
  {
    name: 'server day UTC-11, start exclusive, end inclusive, cap 100',
    options: { dayOffsetMinutes: -660, startdate: 'exclusive', cap: 100 },
  },
  { name: 'ids reused across days (30% of days)', options: { reuseIds: 0.3, cap: 4000 } },
  { name: 'HTTP 400 above a maximum limit of 500', options: { maxLimit: 500, cap: 4000 } },
  {
    name: 'a cap per resource (feedback 50, survey 1000, recordings 4000)',
    options: { cap: 4000, caps: { feedback: 50, survey: 1000 } },
  },
];

const NEUTRAL: SimulatorPatch = {
  startdate: 'inclusive',
  enddate: 'inclusive',
  order: 'oldest-first',
  cap: 4000,
  caps: {},
  maxLimit: null,
  dayOffsetMinutes: 0,
  reuseIds: 0,
  instants: 'refused',
  defaultLimit: null,
};

describe('completeness under every reading of the API', () => {
  let t: TestDatabase;
  let sim: Simulator;
  const falseAlarms: string[] = [];
  let flaggedTotal = 0;
  const rows: string[] = [];

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 11, from: FROM, to: TO });
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
    // The closing figure the issue asks for: false alarms against all flags, over the whole matrix.
    console.info(
      `completeness matrix (items expected/stored, truncated days true/flagged, all resources):\n${rows.join('\n')}\n${flaggedTotal} days flagged, ${falseAlarms.length} false alarms ${JSON.stringify(falseAlarms)}`,
    );
  });

  const cases = [...matrix, ...extras];
  cases.forEach((testCase, index) => {
    it(`backfill then sync: ${testCase.name}`, async () => {
      sim.setOptions({ ...NEUTRAL, ...testCase.options });
      const source = simulatorSource(sim, `case-${index}`);
      const instants = testCase.options.instants ?? 'refused';
      const perRun = [new Map<string, number>(), new Map<string, number>()] as const;
      const backfill = await runAgainst(t, sim, {
        now: NIGHT,
        sources: [source],
        request: { trigger: 'backfill', range: { from: FROM, to: BACKFILL_TO } },
        wrapClient: countInstantRequests(perRun[0]),
      });
      expect(backfill.windows.filter((w) => w.status === 'failed').map((w) => w.error)).toEqual([]);
      const sync = await runAgainst(t, sim, {
        now: NIGHT,
        sources: [source],
        settings: { startDate: FROM },
        wrapClient: countInstantRequests(perRun[1]),
      });
      expect(sync.windows.filter((w) => w.status === 'failed').map((w) => w.error)).toEqual([]);
      // A server that does not honour instants is asked about them once a run and resource at most.
      if (instants !== 'honoured')
        for (const counts of perRun)
          for (const [resource, n] of counts) expect(n, resource).toBeLessThanOrEqual(1);

      const report = await compareWithTruth(t, source.name, sim.truth(), { from: FROM, to: TO });
      const status = await statusReport(t.db, '2026-03-15');
      const all = Object.values(report);
      const sum = (pick: (r: Completeness) => number) => all.reduce((n, r) => n + pick(r), 0);
      rows.push(
        `| ${testCase.name} | ${sum((r) => r.expected)} | ${sum((r) => r.stored)} | ${sum((r) => r.trulyTruncated.length)} | ${sum((r) => r.flagged.length)} |`,
      );
      for (const [resource, r] of Object.entries(report) as [string, Completeness][]) {
        const where = `${testCase.name} / ${resource}`;
        expect(r.missedFlags, `${where}: days missing items without a flag`).toEqual([]);
        expect(r.extra, `${where}: versions the server never served`).toBe(0);
        expect(r.misplaced, `${where}: a key not held by its latest version`).toBe(0);
        if (instants === 'honoured') {
          expect(r.flagged, `${where}: days flagged though instants are honoured`).toEqual([]);
          expect(r.stored, `${where}: items missing though instants are honoured`).toBe(r.expected);
        }
        // status names every flagged day.
        const shown = status.resources.find((s) => s.source === source.name && s.resource === resource);
        expect(shown?.truncatedDays ?? [], where).toEqual(expect.arrayContaining(r.flagged));
        flaggedTotal += r.flagged.length;
        falseAlarms.push(...r.falseAlarms.map((day) => `${index}/${resource}/${day}`));
      }
    });
  });

  it('keeps false alarms near 0 over the whole matrix', () => {
    expect(flaggedTotal).toBeGreaterThan(0);
    expect(falseAlarms.length).toBeLessThanOrEqual(Math.ceil(flaggedTotal * 0.1));
  });
});
