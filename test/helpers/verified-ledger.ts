import { sql } from 'kysely';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { runVerify, type VerifyResult } from '../../src/sync/verify.js';
import type { TestDatabase } from './database.js';
import { runAgainst } from './sync-harness.js';

export const LEDGER_FROM = '2026-03-01';
export const LEDGER_TO = '2026-03-10';
/** The days verified: the rest of the range stays settled and never verified. */
export const VERIFIED_FROM = '2026-03-04';
export const VERIFIED_TO = '2026-03-07';
/** The verified day loaded short: its feedback after noon deleted, as a stale reading leaves it. */
export const SHORT_DAY = '2026-03-05';
/** Ten days after the range: no lookback reads it again. */
export const LEDGER_NOW = new Date('2026-03-20T05:00:00.000Z');

export interface VerifiedLedger {
  sim: Simulator;
  /** Feedback items of SHORT_DAY the warehouse lacked, which the verify stored again. */
  lacked: number;
  verify: VerifyResult;
}

/**
 * A warehouse whose ledger holds verified and unverified settled days: a backfill of ten days
 * (the real engine against the simulator), SHORT_DAY's feedback cut short behind the ledger's
 * back, then a verify of the feedback of four days, which finds and repairs it.
 */
export async function fillVerifiedLedger(
  t: TestDatabase,
  settings: { metricsFile?: string } = {},
): Promise<VerifiedLedger> {
  const volume = { feedbackPerDay: 8, surveyPerDay: 6, recordingsPerDay: 5, busyDayFeedback: 8 };
  const sim = await startSimulator({ seed: 7, from: LEDGER_FROM, to: LEDGER_TO, volume });
  const backfill = await runAgainst(t, sim, {
    now: LEDGER_NOW,
    request: { trigger: 'backfill', range: { from: LEDGER_FROM, to: LEDGER_TO } },
  });
  if (backfill.status !== 'ok') throw new Error(`the backfill ended ${backfill.status}`);
  const cut = await sql<{ n: number }>`
    with gone as (
      delete from feedback where dt >= ${`${SHORT_DAY}T12:00:00Z`}::timestamptz
         and dt < ${`${SHORT_DAY}T00:00:00Z`}::timestamptz + interval '1 day'
      returning 1)
    select count(*)::int as n from gone`.execute(t.db);
  const lacked = cut.rows[0]?.n ?? 0;
  if (lacked === 0) throw new Error(`no feedback after noon on ${SHORT_DAY} to cut`);
  const verify = await runVerify(
    {
      db: t.db,
      run: (request, onWindow) => runAgainst(t, sim, { now: LEDGER_NOW, request, onWindow, settings }),
    },
    { from: VERIFIED_FROM, to: VERIFIED_TO, resources: ['feedback'] },
  );
  return { sim, lacked, verify };
}
