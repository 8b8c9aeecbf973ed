import type { LimitFunction } from 'p-limit';
import type { ApiClient } from '../api/api-client.js';

/**
 * The same client with every request queued on one shared limiter: the bound on requests in
 * flight holds across all sources and resources of a run.
 */
export function limitedClient(client: ApiClient, limit: LimitFunction): ApiClient {
  return {
    source: client.source,
    baseUrl: client.baseUrl,
    listTests: (kind) => limit(() => client.listTests(kind)),
    testResults: (kind, id) => limit(() => client.testResults(kind, id)),
    window: (resource, query, context) => limit(() => client.window(resource, query, context)),
    heatmaps: () => limit(() => client.heatmaps()),
    requestCount: () => client.requestCount(),
  };
}
