import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderStatus } from '../../src/cli/status.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { statusReport } from '../../src/status/status-report.js';
import { compareWithTruth } from '../helpers/completeness-oracle.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { countInstantRequests } from '../helpers/instant-requests.js';
import { runAgainst, simulatorSource } from '../helpers/sync-harness.js';

// Ten days; the 10th (2026-03-10) holds 1,500 feedback items, behind a silent cap of 100.
const FROM = '2026-03-01';
const TO = '2026-03-10';
const BUSY = '2026-03-10';
const NIGHT = new Date('2026-03-12T03:00:00.000Z');

describe('a day above the cap, read in time slices where the server honours instants', () => {
  let t: TestDatabase;
  let sim: Simulator;

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 5, from: FROM, to: TO, cap: 100, order: 'newest-first' });
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
  });

  async function backfill(source: string, counts = new Map<string, number>()) {
    const result = await runAgainst(t, sim, {
      now: NIGHT,
      sources: [simulatorSource(sim, source)],
      request: { trigger: 'backfill', range: { from: FROM, to: TO } },
      wrapClient: countInstantRequests(counts),
    });
    expect(result.windows.filter((w) => w.status === 'failed')).toEqual([]);
    return result;
  }

  it('honoured: the busy day is stored whole, nothing flagged, and status says instants are honoured', async () => {
    sim.setOptions({ instants: 'honoured', startdate: 'exclusive', enddate: 'inclusive' });
    const result = await backfill('honoured');
    expect(result.summary.honoured?.feedback?.truncatedDays).toEqual([]);
    const report = await compareWithTruth(t, 'honoured', sim.truth(), { from: FROM, to: TO });
    expect(report.feedback.stored).toBe(report.feedback.expected);
    expect(report.feedback.trulyTruncated).toEqual([]);

    const status = await statusReport(t.db, '2026-03-12');
    const feedback = status.resources.find((r) => r.source === 'honoured' && r.resource === 'feedback');
    expect(feedback?.truncatedDays).toEqual([]);
    expect(feedback?.reading).toMatchObject({ instants: 'honoured', cap: 100 });
    expect(renderStatus(status)).toContain('instants honoured');
  });

  for (const instants of ['ignored', 'refused'] as const)
    it(`${instants}: the busy day is flagged as before, after one request with instants a run`, async () => {
      sim.setOptions({ instants, startdate: 'inclusive', enddate: 'inclusive' });
      const source = `not-${instants}`;
      for (const run of [1, 2]) {
        const counts = new Map<string, number>();
        const result = await backfill(source, counts);
        expect(result.summary[source]?.feedback?.truncatedDays, `run ${run}`).toEqual([BUSY]);
        expect(Object.fromEntries(counts), `run ${run}`).toEqual({ feedback: 1 });
      }
      const status = await statusReport(t.db, '2026-03-12');
      const feedback = status.resources.find((r) => r.source === source && r.resource === 'feedback');
      expect(feedback?.reading?.instants).toBe(instants);
      expect(feedback?.reading?.summary).toContain(`instants ${instants}`);
    });

  it('sends a limit on every request: a server serving 1 item to a request without one changes nothing', async () => {
    sim.setOptions({ instants: 'honoured', defaultLimit: 1, startdate: 'inclusive', enddate: 'inclusive' });
    try {
      await backfill('default-limit');
      const report = await compareWithTruth(t, 'default-limit', sim.truth(), { from: FROM, to: TO });
      for (const resource of ['feedback', 'survey', 'recordings'] as const) {
        expect(report[resource].stored, resource).toBe(report[resource].expected);
        expect(report[resource].expected, resource).toBeGreaterThan(10);
      }
    } finally {
      sim.setOptions({ defaultLimit: null });
    }
  });
});
