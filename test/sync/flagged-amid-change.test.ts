/**
 * SPEC-GAPS, "a reading that changes": a rolling deploy of the service that lasts the whole
 * backfill (old and new readings of the end bound answering in turn, request by request). A day
 * read while the tool learned the reading anew comes back cut or short and is flagged; its answers
 * say more of the change than of the day. It is recorded reopened, and the night after, the deploy
 * done, reads it first. Before, it stayed flagged: a night reads a truncated day again only where
 * the server has since served more in one answer, or the day filled our limit.
 */
import { describe, expect, it } from 'vitest';
import type { ApiClient } from '../../src/api/api-client.js';
import { WINDOWED_RESOURCES } from '../../src/schemas/resources.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { CHANGED_DAY_LINE, TRUNCATED_DAY_LINE } from '../../src/sync/run-window.js';
import { compareWithTruth } from '../helpers/completeness-oracle.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { capturingLogger } from '../helpers/fake-clock.js';
import { runAgainst } from '../helpers/sync-harness.js';

const FROM = '2026-03-01';
const TO = '2026-03-14';
const NIGHT = new Date('2026-03-16T03:00:00.000Z');
const NIGHT_AFTER = new Date('2026-03-17T03:00:00.000Z');
const VOLUME = { feedbackPerDay: 120, surveyPerDay: 90, recordingsPerDay: 70 };

/** From its 20th window request on, the server reads enddate one way, then the other, in turn. */
function rollingDeploy(sim: Simulator): (client: ApiClient) => ApiClient {
  let asked = 0;
  return (client) => ({
    ...client,
    source: client.source,
    baseUrl: client.baseUrl,
    window: async (resource, query, context) => {
      asked += 1;
      if (asked >= 20) sim.setOptions({ enddate: asked % 2 === 0 ? 'inclusive' : 'exclusive' });
      return client.window(resource, query, context);
    },
  });
}

async function flaggedAndReopened(t: TestDatabase): Promise<string[]> {
  const rows = await t.db
    .selectFrom('sync_windows')
    .select(['resource', 'day'])
    .where('truncated', '=', true)
    .where('reopened_at', 'is not', null)
    .execute();
  return rows.map((row) => `${row.resource} ${row.day}`).sort();
}

/** The days whose last window the run logged as flagged while the server changed how it answers. */
function lastFlaggedAmidChange(lines: Record<string, unknown>[]): string[] {
  const flag = new Map<string, unknown>();
  const last = new Map<string, unknown>();
  for (const line of lines) {
    const day = `${line.resource} ${line.day}`;
    if (line.msg === CHANGED_DAY_LINE || line.msg === TRUNCATED_DAY_LINE) flag.set(day, line.msg);
    if (line.msg !== 'window loaded') continue;
    last.set(day, flag.get(day));
    flag.delete(day);
  }
  return [...last].filter(([, msg]) => msg === CHANGED_DAY_LINE).map(([day]) => day);
}

describe('days flagged while a rolling deploy changes how the server answers', () => {
  /** Days whose last read was flagged while the server changed, over the servers played. */
  const said: string[] = [];

  for (const seed of [3, 4, 5])
    it(`are recorded reopened and read first by the night after, which settles none short (seed ${seed})`, async () => {
      const t = await createTestDatabase();
      const sim = await startSimulator({ seed, from: FROM, to: TO, volume: VOLUME, order: 'oldest-first' });
      try {
        const { logger, lines } = capturingLogger('debug');
        const run = await runAgainst(t, sim, {
          logger,
          now: NIGHT,
          request: { trigger: 'backfill', range: { from: FROM, to: TO } },
          settings: { concurrency: 1 },
          wrapClient: rollingDeploy(sim),
        });
        expect(run.status).toBe('ok');
        const reopened = await flaggedAndReopened(t);
        const amidChange = lastFlaggedAmidChange(lines);
        expect(reopened).toEqual(expect.arrayContaining(amidChange));
        said.push(...amidChange);

        // The deploy done: the new reading alone answers.
        sim.setOptions({ enddate: 'exclusive' });
        const night = await runAgainst(t, sim, { now: NIGHT_AFTER, request: { trigger: 'sync' } });
        expect(night.status).toBe('ok');
        const readAgain = new Set(night.windows.map((w) => `${w.resource} ${w.day}`));
        expect(reopened.filter((day) => !readAgain.has(day))).toEqual([]);
        expect(await flaggedAndReopened(t)).toEqual([]);
        const found = await compareWithTruth(t, 'main', sim.truth(), { from: FROM, to: TO });
        for (const resource of WINDOWED_RESOURCES) expect(found[resource].missedFlags, resource).toEqual([]);
      } finally {
        await sim.stop();
        await t.drop();
      }
      // Two runs of 20 days at one request at a time: 11 to 15 s on the AMD kind alone, over 30 s
      // beside other work.
    }, 120_000);

  it('are found on these servers (the scene plays what it says it plays)', () => {
    console.info(`days flagged while the server changed, recorded reopened: ${said.length}`);
    expect(said).not.toEqual([]);
  });
});
