import { describe, expect, it } from 'vitest';
import type { ServedReading } from '../helpers/sim-readings.js';
import {
  emptyTally,
  endChecksSearch,
  type MidrunCase,
  midrunCases,
  playMidrun,
  printTally,
  SIZES,
  steadyLength,
} from './midrun-search.js';

/**
 * A deploy, or a rolling deploy, that lands among a run's last requests: the checks the run asks
 * once its days are read (the days after its stretches, the canary, a cap's check), side by side
 * over HTTP. Every day is settled by then; a change the checks meet must still reopen or flag what
 * it leaves short. The wide search plays more cases (test/reliability/reading-changes.trials.ts).
 */
describe("a change of the server's reading among the run's last requests", () => {
  it('at each of the last 8 requests of 12 seeded cases: no day settled short, no flag lost', () => {
    const tally = endChecksSearch(12, 20261204, 8);
    printTally('reading changes at the run end', tally);
    expect(tally.cases).toBeGreaterThan(40);
    expect(tally.short).toEqual([]);
    expect(tally.lostFlags).toEqual([]);
  }, 120_000);

  it('a rolling deploy whose old readers answer the canary and new ones the days, found only by the last proof: the days reopened', () => {
    // Found by the wide search (seed 11, case 120, 10 requests before the run's end): the server's
    // day moved 5:30 east, newest first, a busy source above our limit on every day, instants
    // ignored. Old readers answered the canary, which passed; new ones answered four days, each
    // settled whole on an answer ending 5.5 h before its UTC day did; the last proof found the
    // reading stale and reset it, and only the days since the canary were read again: two days
    // stayed settled short (219 of 281 items, 161 of 207). Still played 10 requests before the
    // end of the run a steady server sees, a run now longer than then: it searches out the
    // server's maximum limit.
    const before: ServedReading = {
      startdate: 'inclusive',
      enddate: 'inclusive',
      order: 'newest-first',
      cap: 1000,
      maxLimit: 300,
      dayOffsetMinutes: 0,
      instants: 'ignored',
    };
    const tally = emptyTally();
    const flapping = {
      kind: 'flapping',
      before,
      after: { ...before, dayOffsetMinutes: 330 },
      sizes: SIZES.busy,
    } as const;
    const length = steadyLength(131, { ...flapping, at: 0 });
    const server = playMidrun(131, { ...flapping, at: (length - 9.5) / length }, tally);
    expect(server.switchAt).toBe(length - 10);
    expect(tally.short).toEqual([]);
    expect(tally.lostFlags).toEqual([]);
    expect(tally.reopened).toBeGreaterThan(0);
  });

  it("an end bound turned exclusive 3 requests before the end, on a server day 2 h ahead of UTC's: the last day's late hours, which only the next day's answer holds, reopen it", () => {
    // Found by the wide search (endChecksSearch(1000, 8080801, 16), case 485): newest first, our
    // limit refused above 300, instants refused. The run's last day, 2026-11-19, was asked under
    // the old reading, whose request runs through the next server day (UTC 22:00 to 22:00), and
    // answered under the new one, which stops at the day's server midnight, 22:00 UTC: settled
    // whole at 290 of its 315 items. The run's end asked the next day, whose answer held items in
    // the hours the day's answer, by the reading, served whole and lacked: the day's answer came
    // from another reading, and the day is read again (reading-session.ts, reopenMixed).
    const deploy = midrunCases(486, 8080801)[485] as MidrunCase;
    expect(deploy).toMatchObject({
      kind: 'mid-run',
      before: { enddate: 'inclusive', order: 'newest-first', dayOffsetMinutes: 120, maxLimit: 300 },
      after: { enddate: 'exclusive' },
    });
    const tally = emptyTally();
    const length = steadyLength(8081286, deploy);
    const server = playMidrun(8081286, { ...deploy, at: (length - 2.5) / length }, tally, undefined, length);
    printTally('an end bound turned exclusive 3 requests before the end', tally);
    expect(server.switchAt).toBe(length - 3);
    expect(tally.short).toEqual([]);
    expect(tally.lostFlags).toEqual([]);
  });
});
