import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { addDays, todayUtc } from '../../src/time/days.js';
import type { TestDatabase } from '../helpers/database.js';
import { runAgainst } from '../helpers/sync-harness.js';

/**
 * A warehouse as a site would have it after three weeks of nightly syncs: the simulator serves
 * the 21 days up to today, a first sync loads them five days ago, and one sync a day since,
 * with the service moving on in between (late items, edits, test results growing), so the
 * history has a point per day. The last sync runs at the real now: the watermarks are current.
 */
export const REPORT_DAYS = 21;
const NIGHTLY_SYNCS = 5;

export interface ReportWarehouse {
  sim: Simulator;
  from: string;
  to: string;
}

export async function fillReportWarehouse(t: TestDatabase): Promise<ReportWarehouse> {
  const now = new Date();
  const to = todayUtc(now);
  const from = addDays(to, 1 - REPORT_DAYS);
  const sim = await startSimulator({
    // Seed 1: the visitor of example 12 in docs/warehouse.md (v0001-b64265) is one of its visitors.
    seed: 1,
    from,
    to,
    cap: 4000,
    // Busier than the default, and a busy day that does not dwarf the others in the charts.
    volume: { feedbackPerDay: 30, surveyPerDay: 24, recordingsPerDay: 16, busyDayFeedback: 150 },
  });
  const settings = { startDate: from };
  for (let i = NIGHTLY_SYNCS; i >= 0; i--) {
    if (i < NIGHTLY_SYNCS) sim.advance({ restoreRemoved: true });
    const at = i === 0 ? now : new Date(`${addDays(to, -i)}T04:00:00.000Z`);
    const result = await runAgainst(t, sim, { now: at, settings });
    if (result.status !== 'ok') throw new Error(`the sync at ${at.toISOString()} ended ${result.status}`);
  }
  return { sim, from, to };
}
