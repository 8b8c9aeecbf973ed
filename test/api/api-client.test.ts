import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createApiClient } from '../../src/api/api-client.js';
import { type FixtureServer, json, recordingSleep, startFixtureServer } from './fixture-server.js';

let server: FixtureServer;

beforeEach(async () => {
  server = await startFixtureServer();
});

afterEach(async () => {
  await server.close();
});

function client(baseUrl = server.baseUrl) {
  return createApiClient({
    source: { name: 'shop', baseUrl, apiKey: 'raw-key-42' },
    sleep: recordingSleep().sleep,
  });
}

describe('the eight endpoints', () => {
  it('sends GET with the raw key in Authorization and asks for JSON', async () => {
    server.script(json([{ id: 'a1' }]));
    const api = client();

    await expect(api.listTests('abtesting')).resolves.toEqual([{ id: 'a1' }]);

    expect(server.requests).toHaveLength(1);
    const [request] = server.requests;
    expect(request?.method).toBe('GET');
    expect(request?.url).toBe('/v1/abtesting');
    expect(request?.headers.authorization).toBe('raw-key-42');
    expect(request?.headers.accept).toBe('application/json');
  });

  it('uses the documented paths and query parameters', async () => {
    server.script(json([]));
    const api = client();
    const query = { startdate: '2024-05-01', enddate: '2024-05-02', limit: 1000 };

    await api.listTests('abtesting');
    await api.listTests('personalization');
    await api.testResults('abtesting', 't-1');
    await api.testResults('personalization', 'p-9');
    await api.window('feedback', query);
    await api.window('survey', query);
    await api.window('recordings', query, { day: '2024-05-01' });
    await api.heatmaps();

    expect(server.requests.map((r) => r.url)).toEqual([
      '/v1/abtesting',
      '/v1/personalization',
      '/v1/abtesting/detail/t-1',
      '/v1/personalization/detail/p-9',
      '/v1/feedback?startdate=2024-05-01&enddate=2024-05-02&limit=1000',
      '/v1/survey?startdate=2024-05-01&enddate=2024-05-02&limit=1000',
      '/v1/recordings?startdate=2024-05-01&enddate=2024-05-02&limit=1000',
      '/v1/heatmaps',
    ]);
    expect(api.requestCount()).toBe(8);
  });

  it('URL-encodes the test id of a detail path', async () => {
    server.script(json([]));
    await client().testResults('abtesting', 'a/b c?d#e');
    expect(server.requests[0]?.url).toBe('/v1/abtesting/detail/a%2Fb%20c%3Fd%23e');
  });

  it('accepts a base URL with a trailing slash or a path prefix', async () => {
    server.script(json([]));
    const api = client(`${server.baseUrl}/insights/`);
    expect(api.baseUrl).toBe(`${server.baseUrl}/insights`);
    expect(api.source).toBe('shop');

    await api.heatmaps();
    expect(server.requests[0]?.url).toBe('/insights/v1/heatmaps');
  });

  it('returns the array as it came, unvalidated', async () => {
    const items = [{ id: 1, unknown_field: true }, 'not even an object', null];
    server.script(json(items));
    await expect(client().heatmaps()).resolves.toEqual(items);
  });
});
