/**
 * What a nightly sync of a normal source costs once its warehouse is loaded: each planned day (the
 * lookback and today) once per windowed resource, the snapshots, and the run's proofs of the server
 * reading, amortised per run (reading-session.ts): one canary request a resource at the run's end,
 * and the run's first answer's check for a cap lowered since (a week wider), which the check of
 * the stored reading reads too (reading-check.ts, heldWidest).
 * Today, not over, is read but settles and proves nothing. The ideal is one request a day and
 * resource plus the snapshots; the checks and proofs may add at most half of it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst } from '../helpers/sync-harness.js';

const FROM = '2026-03-01';
const TO = '2026-03-24';
const NIGHT = new Date('2026-03-25T03:00:00.000Z');
/** 20-100 items a day of each resource: a normal source. */
const VOLUME = { feedbackPerDay: 60, surveyPerDay: 40, recordingsPerDay: 30, busyDayFeedback: 90 };

/** One nightly sync at `now`: its requests in all, its windows, and its snapshot requests (every path but the windowed ones). */
async function nightCost(t: TestDatabase, sim: Simulator, now: Date) {
  const before = sim.stats();
  const night = await runAgainst(t, sim, { now, request: { trigger: 'sync' } });
  const after = sim.stats();
  const snapshots = Object.entries(after.byPath).reduce(
    (sum, [path, n]) =>
      /(feedback|survey|recordings)$/.test(path) ? sum : sum + n - (before.byPath[path] ?? 0),
    0,
  );
  return { night, asked: after.requests - before.requests, windows: night.windows.length, snapshots };
}

describe('a nightly sync of a normal source, nothing new since', () => {
  let t: TestDatabase;
  let sim: Simulator;

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 77, from: FROM, to: TO, volume: VOLUME });
    const first = await runAgainst(t, sim, {
      now: NIGHT,
      request: { trigger: 'backfill', range: { from: FROM, to: '2026-03-24' } },
    });
    expect(first.status).toBe('ok');
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
  });

  it('asks at most 1.5 times the ideal: one request a planned day and resource, and the snapshots', async () => {
    const { night, asked, windows, snapshots } = await nightCost(t, sim, NIGHT);
    expect(night.status).toBe('ok');
    const ideal = windows + snapshots;
    console.info(
      `nightly no-op: ${windows} windows, ${snapshots} snapshot requests, ${asked} requests in all (ideal ${ideal}, at most ${Math.floor(1.5 * ideal)})`,
    );
    expect(windows).toBeGreaterThan(0);
    expect(asked).toBeLessThanOrEqual(Math.floor(1.5 * ideal));
    // Two a resource beside its windows: the run's first answer's cap check, whose week-wide answer
    // the reading's check reads too, and the canary at the run's end.
    expect(asked).toBeLessThanOrEqual(ideal + 2 * 3);
  });
});

/**
 * A source with nothing since its last day of data, on a server that caps an endpoint and honours
 * instants (so every settled day's reading is checked by its UTC day): every planned day is empty.
 * One empty answer never settles a day (a transient `200 []` would lose it), so an empty day costs
 * two: its own request and the widest, which holds the day under any reading and, empty, leaves
 * the reading's check nothing to tell of it. The open day is asked and checked as any night.
 */
describe('a nightly sync of a source with nothing since its last day of data, its server capped', () => {
  const QUIET_NIGHT = new Date('2026-04-01T03:00:00.000Z');
  let t: TestDatabase;
  let sim: Simulator;

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({
      seed: 78,
      from: FROM,
      to: TO,
      volume: { ...VOLUME, busyDayFeedback: 400 },
      caps: { feedback: 100 },
      instants: 'honoured',
    });
    const first = await runAgainst(t, sim, {
      now: QUIET_NIGHT,
      request: { trigger: 'backfill', range: { from: FROM, to: TO } },
    });
    expect(first.status).toBe('ok');
    // The night before: its lookback's days are settled empty, its today read open.
    const before = new Date(QUIET_NIGHT.getTime() - 86_400_000);
    expect((await runAgainst(t, sim, { now: before, request: { trigger: 'sync' } })).status).toBe('ok');
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
  });

  it('asks two requests an empty day, the snapshots, and two checks a resource', async () => {
    const { night, asked, windows, snapshots } = await nightCost(t, sim, QUIET_NIGHT);
    expect(night.status).toBe('ok');
    expect(night.windows.every((w) => w.fetched === 0)).toBe(true);
    // Two a resource beside: the reading's check, and the run's end asking whether a size days
    // settled at again and again is a cap (day-plan.ts, checkCeiling).
    const bound = 2 * windows + snapshots + 2 * 3;
    console.info(
      `nightly no-op, empty days: ${windows} windows, ${snapshots} snapshot requests, ${asked} requests in all (ideal ${windows + snapshots}, at most ${bound})`,
    );
    expect(windows).toBe(12);
    expect(asked).toBeLessThanOrEqual(bound);
  });
});
