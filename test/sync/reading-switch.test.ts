/**
 * SPEC-GAPS, "a reading that changes": a server deployed in the middle of a backfill starts to
 * read enddate as exclusive. The narrow requests asked after that come back empty or short; a
 * day settled on such an answer is short, silently, unless the run's proofs catch it. Compared
 * with the simulator's ground truth: every day the ledger says complete holds every item.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiClient } from '../../src/api/api-client.js';
import { WINDOWED_RESOURCES } from '../../src/schemas/resources.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { compareWithTruth, reopenedDays } from '../helpers/completeness-oracle.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { capturingLogger } from '../helpers/fake-clock.js';
import { runAgainst } from '../helpers/sync-harness.js';

const FROM = '2026-03-01';
const TO = '2026-03-20';
const NIGHT = new Date('2026-03-22T03:00:00.000Z');

const STALE_LINE = 'server reading proved stale since days were settled: reading them again';
const LATE_EVIDENCE_LINE =
  "days answered before the server cap was learned, or under a request narrower than the server's reading as learned since, may be short: reading them again";
const WARN = 'warn';

/** A client that flips the simulator's enddate to exclusive after `after` window requests. */
function deployAfter(
  sim: Simulator,
  after: number,
): { wrap: (client: ApiClient) => ApiClient; asked: () => number } {
  let asked = 0;
  return {
    asked: () => asked,
    wrap: (client) => ({
      ...client,
      source: client.source,
      baseUrl: client.baseUrl,
      window: async (resource, query, context) => {
        asked += 1;
        if (asked === after) sim.setOptions({ enddate: 'exclusive' });
        return client.window(resource, query, context);
      },
    }),
  };
}

describe('a server whose enddate turns exclusive in the middle of a backfill', () => {
  let t: TestDatabase;
  let sim: Simulator;

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 4242, from: FROM, to: TO });
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
  });

  it('settles no day short: every day not flagged holds every item, and the stale days are read again', async () => {
    const deploy = deployAfter(sim, 40);
    const counts: { done: number; total: number }[] = [];
    const { logger, lines } = capturingLogger();
    const result = await runAgainst(t, sim, {
      logger,
      now: NIGHT,
      request: { trigger: 'backfill', range: { from: FROM, to: TO } },
      settings: { concurrency: 1 },
      wrapClient: deploy.wrap,
      onWindow: (_outcome, done, total) => counts.push({ done, total }),
    });
    // The days read again are counted as more work: progress never runs past its total.
    const planned = counts[0]?.total ?? 0;
    expect(counts.at(-1)?.total).toBeGreaterThan(planned);
    expect(counts.filter(({ done, total }) => done > total)).toEqual([]);
    expect(deploy.asked()).toBeGreaterThan(40);
    expect(result.status).toBe('ok');
    const found = await compareWithTruth(t, 'main', sim.truth(), { from: FROM, to: TO });
    const { busyDay } = sim.truth().meta;
    for (const resource of WINDOWED_RESOURCES) {
      const { missedFlags, flagged } = found[resource];
      expect(missedFlags, `${resource}: days short but settled complete`).toEqual([]);
      // Only the day above the cap (1,000, no instants) is flagged: the others are read whole.
      expect(
        flagged.filter((day) => day !== busyDay),
        resource,
      ).toEqual([]);
    }
    // Nothing is left reopened: the run read every reopened day again, and proved it.
    expect(await reopenedDays(t)).toEqual([]);
    expect(lines.filter((line) => line.msg === STALE_LINE).map((line) => line.level)).not.toEqual([]);
    expect(lines.some((line) => line.msg === STALE_LINE && line.level !== WARN)).toBe(false);
  });
});

describe('a server that holds still, whose cap the backfill learns only on its busy day', () => {
  it('reads no day again: each was settled on an answer below the cap it learned later, and no reading is stale', async () => {
    const t = await createTestDatabase();
    // The demo's server on a fixed calendar: cap 1,000, a busy day above it late in the range.
    const sim = await startSimulator({ seed: 17, from: '2026-10-30', to: '2026-11-28' });
    try {
      const { logger, lines } = capturingLogger();
      const result = await runAgainst(t, sim, {
        logger,
        now: new Date('2026-11-29T03:00:00.000Z'),
        request: { trigger: 'backfill', range: { from: '2026-10-30', to: '2026-11-28' } },
        settings: { concurrency: 2 },
      });
      expect(result.status).toBe('ok');
      // Two days had a wider answer stop at our limit (1,000, the cap too) before the cap was
      // learned; each settled on its own answer of a few items, which no cap cut: nothing to
      // read again (the run read both again when it went by a day's largest answer).
      expect(lines.filter((line) => line.msg === LATE_EVIDENCE_LINE)).toEqual([]);
      expect(lines.filter((line) => line.msg === STALE_LINE)).toEqual([]);
      expect(await reopenedDays(t)).toEqual([]);
    } finally {
      await sim.stop();
      await t.drop();
    }
  });
});
