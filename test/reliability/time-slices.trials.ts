import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  daysAboveCap,
  type Simulator,
  type SimulatorPatch,
  startSimulator,
} from '../../src/simulator/server.js';
import { compareWithTruth } from '../helpers/completeness-oracle.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst, simulatorSource } from '../helpers/sync-harness.js';

/**
 * What time slices buy, measured: a 92-day backfill from a server capping at 30 items per
 * response, newest first, busy enough that most days are above the cap, under each reading of
 * instants. Prints, per reading, the items expected and stored, the days flagged truncated, and
 * the windowed requests per day and resource.
 */
const FROM = '2026-01-01';
const TO = '2026-04-02';
const DAYS = 92;
const NIGHT = new Date('2026-04-04T03:00:00.000Z');
const VOLUME = { feedbackPerDay: 40, surveyPerDay: 30, recordingsPerDay: 20, busyDayFeedback: 1500 };
const SERVER: SimulatorPatch = { cap: 30, order: 'newest-first' };

const READINGS: Array<{ name: string; options: SimulatorPatch }> = [
  { name: 'instants honoured, inclusive at them', options: { instants: 'honoured' } },
  {
    name: 'instants honoured, exclusive at them',
    options: { instants: 'honoured', startdate: 'exclusive', enddate: 'exclusive' },
  },
  { name: 'instants ignored', options: { instants: 'ignored' } },
  { name: 'instants refused', options: { instants: 'refused' } },
];

describe('a 92-day backfill behind a cap of 30, newest first', () => {
  let t: TestDatabase;
  let sim: Simulator;
  const rows: string[] = [];

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 92, from: FROM, to: TO, volume: VOLUME });
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
    console.info(
      `time slices (92 days, cap 30, newest first):\n| reading | items expected | stored | days truly above the cap | days flagged | windowed requests | per day and resource |\n${rows.join('\n')}`,
    );
  });

  READINGS.forEach(({ name, options }, index) => {
    it(name, async () => {
      sim.setOptions({ startdate: 'inclusive', enddate: 'inclusive', ...SERVER, ...options });
      sim.resetStats();
      const source = simulatorSource(sim, `reading-${index}`);
      const result = await runAgainst(t, sim, {
        now: NIGHT,
        sources: [source],
        request: { trigger: 'backfill', range: { from: FROM, to: TO } },
      });
      expect(result.windows.filter((w) => w.status === 'failed').map((w) => w.error)).toEqual([]);
      const byPath = sim.stats().byPath;
      const requests = ['feedback', 'survey', 'recordings'].reduce(
        (n, r) => n + (byPath[`/v1/${r}`] ?? 0),
        0,
      );
      const report = Object.values(
        await compareWithTruth(t, source.name, sim.truth(), { from: FROM, to: TO }),
      );
      const sum = (pick: (r: (typeof report)[number]) => number) => report.reduce((n, r) => n + pick(r), 0);
      const truth = sim.truth();
      const aboveCap = (['feedback', 'survey', 'recordings'] as const).reduce(
        (n, r) => n + daysAboveCap(truth, r, 30, 'utc').length,
        0,
      );
      rows.push(
        `| ${name} | ${sum((r) => r.expected)} | ${sum((r) => r.stored)} | ${aboveCap} | ${sum((r) => r.flagged.length)} | ${requests} | ${(requests / (DAYS * 3)).toFixed(1)} |`,
      );
      for (const r of report) expect(r.missedFlags).toEqual([]);
      if (options.instants === 'honoured') {
        expect(sum((r) => r.flagged.length)).toBe(0);
        expect(sum((r) => r.stored)).toBe(sum((r) => r.expected));
      }
    });
  });
});
