import { setTimeout as sleep } from 'node:timers/promises';
import type { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiClient } from '../../src/api/api-client.js';
import type { SourceConfig } from '../../src/config/source-config.js';
import { itemDay } from '../../src/extract/server-reading.js';
import { silentLogger } from '../../src/log/logger.js';
import { ensureSlots } from '../../src/queue/source-slots.js';
import { openQueue, type QueueSettings } from '../../src/queue/window-queue.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import type { RunResult } from '../../src/sync/outcomes.js';
import { queueDispatch } from '../../src/sync/queue-dispatch.js';
import { defaultClient, runSync } from '../../src/sync/run-sync.js';
import { runWorker } from '../../src/sync/window-worker.js';
import type { DayString } from '../../src/time/days.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { sourceKeys } from '../helpers/queue-cluster.js';
import { TEST_SETTINGS } from '../helpers/sync-harness.js';

/**
 * A queued run's checks of the source's server are the run's, not each worker's: whether the
 * stored reading still holds and whether the source is quiet (reading-check.ts, quiet-mode.ts),
 * and the largest answer the run has seen, below which no answer needs a week-wide request to
 * tell it from a silent cap's cut (day-plan.ts, cappedAt). Workers of one run share them through
 * queue_run_checks, so four workers ask them about as often as one does.
 *
 * Each window's requests are told apart by what they ask, in the order its plan asks them: the
 * day's own request first; a request a week wider on each side, the cap check; the request that
 * holds the day under every reading (five days) after an answer holding items of the day, the
 * reading check (or the question whether the source is quiet), after one holding none, an empty
 * day's; anything else (proofs) apart.
 */

const TODAY = '2026-10-20' as DayString;
const FROM = '2026-10-01' as DayString;
const TO = '2026-10-12' as DayString;
const SOURCES = 2;

/** Two windows of a source in flight, across every worker, as the queue benchmark runs. */
const QUEUE: QueueSettings = {
  sourceConcurrency: 2,
  queueExpireSeconds: 60,
  queueMaintenanceSeconds: 60,
  queueRetryLimit: 3,
};

type Kind = 'own' | 'cap check' | 'reading check' | 'empty widest' | 'other';

/** Requests by kind, and the run's checks by source and resource. */
interface Tally {
  byKind: Record<Kind, number>;
  checks: Map<string, { cap: number; reading: number }>;
}

const newTally = (): Tally => ({
  byKind: { own: 0, 'cap check': 0, 'reading check': 0, 'empty widest': 0, other: 0 },
  checks: new Map(),
});

/** Days from the first's to the last's, both counted (an instant counts its day). */
const spanDays = (from: string, to: string) =>
  Math.round((Date.parse(to.slice(0, 10)) - Date.parse(from.slice(0, 10))) / 86_400_000) + 1;

/** A window's client that tallies its windowed requests by kind (see above); the worker makes one a window. */
function countingClient(client: ApiClient, tally: Tally): ApiClient {
  /** Per day asked for: the last request's span (0: instants), and whether its answer held items of the day. */
  const last = new Map<string, { span: number; heldDay: boolean }>();
  return {
    source: client.source,
    baseUrl: client.baseUrl,
    listTests: (kind) => client.listTests(kind),
    testResults: (kind, id) => client.testResults(kind, id),
    heatmaps: () => client.heatmaps(),
    requestCount: () => client.requestCount(),
    async window(resource, query, context) {
      const day = context?.day ?? '';
      const instants = query.startdate.length > 10;
      const span = instants ? 0 : spanDays(query.startdate, query.enddate);
      const before = last.get(`${resource}/${day}`);
      let kind: Kind = 'other';
      if (before === undefined) kind = 'own';
      else if (span >= 15) kind = 'cap check';
      else if (span === 5 && before.span !== 5) kind = before.heldDay ? 'reading check' : 'empty widest';
      tally.byKind[kind] += 1;
      const key = `${client.source}/${resource}`;
      const checks = tally.checks.get(key) ?? { cap: 0, reading: 0 };
      tally.checks.set(key, checks);
      if (kind === 'cap check') checks.cap += 1;
      if (kind === 'reading check') checks.reading += 1;
      const items = await client.window(resource, query, context);
      last.set(`${resource}/${day}`, { span, heldDay: items.some((item) => itemDay(item) === day) });
      return items;
    },
  };
}

describe("a queued run's checks of the server", () => {
  let t: TestDatabase;
  let sim: Simulator;
  let boss: PgBoss;
  const sources: SourceConfig[] = [];

  beforeAll(async () => {
    t = await createTestDatabase();
    const keys = sourceKeys(SOURCES);
    // The busy day within our limit: a check's widest answer cut by it is asked again on later days
    // (reading-check.ts, MAX_CUT_CHECKS), by each worker, which this test does not count.
    sim = await startSimulator({
      seed: 41,
      from: FROM,
      to: TO,
      cap: 10_000,
      apiKeys: keys,
      volume: { busyDayFeedback: 20 },
    });
    sources.push(...keys.map((apiKey, i) => ({ name: `s${i + 1}`, baseUrl: sim.url, apiKey })));
    boss = await openQueue(t.url, t.schema, QUEUE, silentLogger());
    await ensureSlots(
      t.db,
      sources.map((s) => s.name),
      QUEUE.sourceConcurrency,
    );
  });
  afterAll(async () => {
    await boss?.stop({ graceful: false, timeout: 1000 });
    await sim?.stop();
    await t?.drop();
  });

  /** A backfill of every day through the queue, its windows run by `workers` workers in process. */
  async function queuedBackfill(workers: number): Promise<{ result: RunResult; tally: Tally }> {
    const tally = newTally();
    const stop = new AbortController();
    const running: Promise<unknown>[] = [];
    for (let i = 0; i < workers; i++) {
      // A worker's id is named after the millisecond it started: one each.
      await sleep(2);
      running.push(
        runWorker({
          pool: t.pool,
          db: t.db,
          url: t.url,
          schema: t.schema,
          boss,
          logger: silentLogger(),
          sources,
          settings: { ...TEST_SETTINGS, workerConcurrency: 4 },
          signal: stop.signal,
          pollMs: 20,
          createClient: (source, options) =>
            countingClient(defaultClient(source, TEST_SETTINGS, options), tally),
        }),
      );
    }
    try {
      const result = await runSync(
        {
          pool: t.pool,
          db: t.db,
          logger: silentLogger(),
          now: () => new Date(`${TODAY}T12:00:00Z`),
          sources,
          settings: { ...TEST_SETTINGS, startDate: FROM },
          dispatch: queueDispatch({ boss, url: t.url, schema: t.schema, settings: QUEUE, pollMs: 20 }),
        },
        {
          trigger: 'backfill',
          range: { from: FROM, to: TO },
          resources: ['feedback', 'survey', 'recordings'],
        },
      );
      return { result, tally };
    } finally {
      stop.abort();
      await Promise.all(running);
    }
  }

  it('four workers ask the run its checks once per source and resource, as one worker does, not once each', async () => {
    // The server learned and stored, as a later backfill finds it.
    expect((await queuedBackfill(1)).result.status).toBe('ok');
    const one = await queuedBackfill(1);
    const four = await queuedBackfill(4);
    const windows = SOURCES * 3 * spanDays(FROM, TO);
    console.info(
      `requests by kind, ${windows} windows once learned: 1 worker ${JSON.stringify(one.tally.byKind)}, 4 workers ${JSON.stringify(four.tally.byKind)}`,
    );
    expect(one.result.status).toBe('ok');
    expect(four.result.status).toBe('ok');
    for (const source of sources)
      for (const resource of ['feedback', 'survey', 'recordings']) {
        const key = `${source.name}/${resource}`;
        const [alone, shared] = [one.tally.checks.get(key), four.tally.checks.get(key)];
        // One more at most: a window another worker started at the moment the first made the check.
        // Each worker asked its own before (four workers: 23 cap checks and 23 reading checks of
        // these 6 sources and resources, one worker 6 and 6).
        expect(shared?.cap ?? 0, key).toBeLessThanOrEqual((alone?.cap ?? 0) + 1);
        expect(shared?.reading ?? 0, key).toBeLessThanOrEqual((alone?.reading ?? 0) + 1);
      }
  }, 120_000);
});
