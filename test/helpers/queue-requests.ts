import { setTimeout as sleep } from 'node:timers/promises';
import type { PgBoss } from 'pg-boss';
import { afterAll, beforeAll } from 'vitest';
import type { ApiClient } from '../../src/api/api-client.js';
import type { SourceConfig } from '../../src/config/source-config.js';
import { itemDay } from '../../src/extract/server-reading.js';
import { type Logger, silentLogger } from '../../src/log/logger.js';
import { ensureSlots } from '../../src/queue/source-slots.js';
import { openQueue, type QueueSettings } from '../../src/queue/window-queue.js';
import { type Simulator, type SimulatorOptions, startSimulator } from '../../src/simulator/server.js';
import type { RunResult } from '../../src/sync/outcomes.js';
import { queueDispatch } from '../../src/sync/queue-dispatch.js';
import { defaultClient, runSync } from '../../src/sync/run-sync.js';
import { runWorker } from '../../src/sync/window-worker.js';
import type { DayString } from '../../src/time/days.js';
import { createTestDatabase, type TestDatabase } from './database.js';
import { sourceKeys } from './queue-cluster.js';
import { TEST_SETTINGS } from './sync-harness.js';

/**
 * Queued backfills of several sources on one simulator, their windows run by workers in process,
 * each windowed request tallied by kind. A window's requests are told apart by what they ask, in
 * the order its plan asks them: the day's own request first; a request a week wider on each side,
 * the cap check (day-plan.ts, cappedAt); the request that holds the day under every reading (five
 * days) after an answer holding items of the day, the reading check or the question whether the
 * source is quiet (reading-check.ts), after one holding none, an empty day's; anything else
 * (proofs, time slices) apart. The planner's own requests (the run's last proof) are not counted.
 */

export type RequestKind = 'own' | 'cap check' | 'reading check' | 'empty widest' | 'other';

/** Requests by kind, and the run's checks by source and resource (`s1/feedback`). */
export interface RequestTally {
  byKind: Record<RequestKind, number>;
  checks: Map<string, { cap: number; reading: number }>;
}

/** Two windows of a source in flight, across every worker, as the queue benchmark runs. */
const QUEUE: QueueSettings = {
  sourceConcurrency: 2,
  queueExpireSeconds: 60,
  queueMaintenanceSeconds: 60,
  queueRetryLimit: 3,
};

/** Days from the first's to the last's, both counted (an instant counts its day). */
export const spanDays = (from: string, to: string) =>
  Math.round((Date.parse(to.slice(0, 10)) - Date.parse(from.slice(0, 10))) / 86_400_000) + 1;

/** A window's client that tallies its windowed requests by kind; the worker makes one a window. */
function countingClient(client: ApiClient, tally: RequestTally): ApiClient {
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
      let kind: RequestKind = 'other';
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

export interface QueuedBackfills {
  /** Sources `s1`.. on the simulator, each with its own key (sourceKeys). */
  sources: SourceConfig[];
  /** A backfill of every day of `range` through the queue, its windows run by `workers` workers. */
  backfill(workers: number): Promise<{ result: RunResult; tally: RequestTally }>;
  stop(): Promise<void>;
}

export interface QueuedBackfillsOptions {
  sources: number;
  range: { from: DayString; to: DayString };
  today: DayString;
  /** Wraps the planner's own client (its last proof's and snapshots' requests). */
  plannerClient?: (client: ApiClient) => ApiClient;
  /** The planner's and the workers' logger (silent by default): a trial keeps a failing case's. */
  logger?: Logger;
}

/** A warehouse, a simulator and the queued backfills on them, for the calling describe block. */
export interface QueuedScene {
  t: TestDatabase;
  sim: Simulator;
  queued: QueuedBackfills;
}

/**
 * For the calling describe block, gone after it: a warehouse, a simulator of `options.range`
 * serving `options.sources` sources (each with its own key, sourceKeys) as `simulator` says, and
 * the queued backfills of them.
 */
export function useQueuedBackfills(
  simulator: Omit<SimulatorOptions, 'from' | 'to' | 'apiKeys'>,
  options: QueuedBackfillsOptions,
): QueuedScene {
  const scene = {} as QueuedScene;
  beforeAll(async () => {
    scene.t = await createTestDatabase();
    scene.sim = await startSimulator({
      ...simulator,
      from: options.range.from,
      to: options.range.to,
      apiKeys: sourceKeys(options.sources),
    });
    scene.queued = await queuedBackfills(scene.t, scene.sim, options);
  });
  afterAll(async () => {
    await scene.queued?.stop();
    await scene.sim?.stop();
    await scene.t?.drop();
  });
  return scene;
}

/** The queue on `t`, with the slots of `sources` sources of `sim` (started with `apiKeys: sourceKeys(sources)`). */
export async function queuedBackfills(
  t: TestDatabase,
  sim: Simulator,
  options: QueuedBackfillsOptions,
): Promise<QueuedBackfills> {
  const sources = sourceKeys(options.sources).map((apiKey, i) => ({
    name: `s${i + 1}`,
    baseUrl: sim.url,
    apiKey,
  }));
  const boss: PgBoss = await openQueue(t.url, t.schema, QUEUE, silentLogger());
  await ensureSlots(
    t.db,
    sources.map((s) => s.name),
    QUEUE.sourceConcurrency,
  );
  const backfill = async (workers: number) => {
    const logger = options.logger ?? silentLogger();
    const tally: RequestTally = {
      byKind: { own: 0, 'cap check': 0, 'reading check': 0, 'empty widest': 0, other: 0 },
      checks: new Map(),
    };
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
          logger: logger.child({ worker: i + 1 }),
          sources,
          settings: { ...TEST_SETTINGS, workerConcurrency: 4 },
          signal: stop.signal,
          pollMs: 20,
          createClient: (source, clientOptions) =>
            countingClient(defaultClient(source, TEST_SETTINGS, clientOptions), tally),
        }),
      );
    }
    try {
      const result = await runSync(
        {
          pool: t.pool,
          db: t.db,
          logger,
          now: () => new Date(`${options.today}T12:00:00Z`),
          sources,
          settings: { ...TEST_SETTINGS, startDate: options.range.from },
          dispatch: queueDispatch({ boss, url: t.url, schema: t.schema, settings: QUEUE, pollMs: 20 }),
          createClient: (source, clientOptions) => {
            const client = defaultClient(source, TEST_SETTINGS, clientOptions);
            return options.plannerClient?.(client) ?? client;
          },
        },
        { trigger: 'backfill', range: options.range, resources: ['feedback', 'survey', 'recordings'] },
      );
      return { result, tally };
    } finally {
      stop.abort();
      await Promise.all(running);
    }
  };
  return { sources, backfill, stop: () => boss.stop({ graceful: false, timeout: 1000 }) };
}
