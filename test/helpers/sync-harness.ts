import { type ApiClient, createApiClient } from '../../src/api/api-client.js';
import type { SourceConfig } from '../../src/config/source-config.js';
import { type Logger, silentLogger } from '../../src/log/logger.js';
import { WINDOWED_RESOURCES } from '../../src/schemas/resource-names.js';
import type { Simulator } from '../../src/simulator/server.js';
import {
  ITEM_IDENTITY,
  otherItems,
  type RunResult,
  unaccountedItems,
  type WindowOutcome,
} from '../../src/sync/outcomes.js';
import { runSync, type SyncRequest, type SyncSettings } from '../../src/sync/run-sync.js';
import type { TestDatabase } from './database.js';

export const TEST_SETTINGS: SyncSettings = {
  concurrency: 4,
  lookbackDays: 3,
  startDate: '2026-03-01',
  limit: 1000,
  maxLimit: 4000,
  requestTimeoutMs: 2000,
  maxAttempts: 6,
  retryBaseMs: 0,
  retryMaxMs: 0,
  retryAfterCapMs: 0,
  maxInvalidShare: 0.05,
};

export interface RunOptions {
  now: Date;
  request?: Partial<SyncRequest>;
  settings?: Partial<SyncSettings>;
  sources?: SourceConfig[];
  logger?: Logger;
  signal?: AbortSignal;
  /** Wraps each source's client, e.g. to rewrite or fail some responses. */
  wrapClient?: (client: ApiClient) => ApiClient;
  /** Called with each window's outcome (SyncDeps.onWindow). */
  onWindow?: (outcome: WindowOutcome, done: number, total: number) => void;
}

export function simulatorSource(sim: Simulator, name = 'main', apiKey = sim.apiKey): SourceConfig {
  return { name, baseUrl: sim.url, apiKey };
}

/**
 * One run against the simulator with the real client, minus the waiting: retries sleep 0 ms so
 * fault tests converge in milliseconds.
 */
export async function runAgainst(t: TestDatabase, sim: Simulator, options: RunOptions): Promise<RunResult> {
  const settings = { ...TEST_SETTINGS, ...options.settings };
  const logger = options.logger ?? silentLogger();
  const result = await runSync(
    {
      pool: t.pool,
      db: t.db,
      logger,
      now: () => options.now,
      sources: options.sources ?? [simulatorSource(sim)],
      settings,
      createClient: (source, clientOptions) => {
        const client = createApiClient({
          source,
          timeoutMs: settings.requestTimeoutMs,
          retry: { maxAttempts: settings.maxAttempts, baseDelayMs: 0, maxDelayMs: 0, retryAfterCapMs: 0 },
          sleep: async () => {},
          logger: clientOptions.logger,
          ...(clientOptions.onResponse === undefined ? {} : { onResponse: clientOptions.onResponse }),
          pace: clientOptions.pace,
        });
        return options.wrapClient ? options.wrapClient(client) : client;
      },
      ...(options.signal === undefined ? {} : { signal: options.signal }),
      ...(options.onWindow === undefined ? {} : { onWindow: options.onWindow }),
    },
    { trigger: 'sync', ...options.request },
  );
  assertItemsAddUp(result);
  return result;
}

/**
 * Every run the tests make through this harness: each day window's fetched items, and each
 * resource's and the run's totals, add up (ITEM_IDENTITY in src/sync/outcomes.ts).
 */
export function assertItemsAddUp(result: RunResult): void {
  const wrong: string[] = [];
  for (const w of result.windows)
    if (unaccountedItems(w) !== 0) wrong.push(`${w.source}/${w.resource}/${w.day}: ${JSON.stringify(w)}`);
  let total = { fetched: 0, inserted: 0, updated: 0, unchanged: 0, rejected: 0, other: 0 };
  for (const [source, resources] of Object.entries(result.summary))
    for (const resource of WINDOWED_RESOURCES) {
      const s = resources[resource];
      if (s === undefined) continue;
      if (unaccountedItems(s) !== 0) wrong.push(`${source}/${resource}: ${JSON.stringify(s)}`);
      total = {
        fetched: total.fetched + s.fetched,
        inserted: total.inserted + s.inserted,
        updated: total.updated + s.updated,
        unchanged: total.unchanged + s.unchanged,
        rejected: total.rejected + s.rejected,
        other: total.other + otherItems(s),
      };
    }
  if (total.fetched !== total.inserted + total.updated + total.unchanged + total.rejected + total.other)
    wrong.push(`run total: ${JSON.stringify(total)}`);
  if (wrong.length > 0)
    throw new Error(`${ITEM_IDENTITY} does not hold for run ${result.runId}:\n${wrong.join('\n')}`);
}
