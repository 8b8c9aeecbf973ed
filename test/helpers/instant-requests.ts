import type { ApiClient } from '../../src/api/api-client.js';

/**
 * Wraps a client (RunOptions.wrapClient) to count, per resource, the requests it sends with an
 * ISO instant in startdate or enddate rather than a day: what asking a server about instants costs.
 */
export function countInstantRequests(counts: Map<string, number>): (client: ApiClient) => ApiClient {
  return (client) => ({
    ...client,
    window: (resource, query, context) => {
      if (query.startdate.length > 10 || query.enddate.length > 10)
        counts.set(resource, (counts.get(resource) ?? 0) + 1);
      return client.window(resource, query, context);
    },
  });
}
