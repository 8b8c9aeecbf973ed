import { type ApiClient, createApiClient } from '../../src/api/api-client.js';
import type { SourceConfig } from '../../src/config/config.js';
import { type Logger, silentLogger } from '../../src/log/logger.js';
import type { Simulator } from '../../src/simulator/server.js';
import type { RunResult } from '../../src/sync/outcomes.js';
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
}

export function simulatorSource(sim: Simulator, name = 'main', apiKey = sim.apiKey): SourceConfig {
  return { name, baseUrl: sim.url, apiKey };
}

/**
 * One run against the simulator with the real client, minus the waiting: retries sleep 0 ms so
 * fault tests converge in milliseconds.
 */
export function runAgainst(t: TestDatabase, sim: Simulator, options: RunOptions): Promise<RunResult> {
  const settings = { ...TEST_SETTINGS, ...options.settings };
  const logger = options.logger ?? silentLogger();
  return runSync(
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
    },
    { trigger: 'sync', ...options.request },
  );
}
