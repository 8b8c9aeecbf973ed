import { describe, expect, it } from 'vitest';
import { type LoadConfigOptions, loadConfig } from '../../src/config/config.js';
import type { Env } from '../../src/config/env-settings.js';
import { ConfigError } from '../../src/errors.js';

const NOW = () => new Date('2026-03-10T12:00:00.000Z');
const SOURCE_ENV: Env = { INSIGHTS_API_URL: 'https://api.example.com/', INSIGHTS_API_KEY: 'key-123' };

function load(env: Env, options: Omit<LoadConfigOptions, 'env'> = {}) {
  return loadConfig({ env, now: NOW, readFile: noFile, ...options });
}

function noFile(path: string): string {
  throw new Error(`ENOENT: ${path}`);
}

/** The ConfigError thrown by `fn`; fails the test when it throws nothing or something else. */
function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error('expected a ConfigError, nothing was thrown');
}

describe('loadConfig defaults', () => {
  it('fills every setting from the defaults when only the source is given', () => {
    const config = load(SOURCE_ENV);
    expect(config).toMatchObject({
      databaseUrl: undefined,
      schema: 'insights',
      concurrency: 4,
      lookbackDays: 3,
      startDate: '2026-02-08',
      limit: 1000,
      maxLimit: 10_000,
      logLevel: 'info',
    });
    expect(config.sources).toEqual([
      { name: 'default', baseUrl: 'https://api.example.com', apiKey: 'key-123' },
    ]);
  });

  it('starts 30 days before the UTC day of now, whatever the local time zone says', () => {
    // 00:30 in UTC+2 on March 1st is still February 28th in UTC.
    const config = loadConfig({ env: SOURCE_ENV, now: () => new Date('2026-03-01T00:30:00+02:00') });
    expect(config.startDate).toBe('2026-01-29');
  });

  it('treats an empty variable as unset', () => {
    expect(load({ ...SOURCE_ENV, INSIGHTS_CONCURRENCY: '', INSIGHTS_SCHEMA: '' })).toMatchObject({
      concurrency: 4,
      schema: 'insights',
    });
  });

  it('reads valid values', () => {
    const config = load({
      ...SOURCE_ENV,
      DATABASE_URL: 'postgres://u:p@db:5432/warehouse',
      INSIGHTS_SCHEMA: 'web_insights',
      INSIGHTS_CONCURRENCY: '8',
      INSIGHTS_LOOKBACK_DAYS: '0',
      INSIGHTS_START_DATE: '2024-02-29',
      INSIGHTS_LIMIT: '500',
      INSIGHTS_MAX_LIMIT: '500',
      INSIGHTS_MAX_INVALID_SHARE: '0.1',
      LOG_LEVEL: 'debug',
    });
    expect(config).toMatchObject({
      databaseUrl: 'postgres://u:p@db:5432/warehouse',
      schema: 'web_insights',
      concurrency: 8,
      lookbackDays: 0,
      startDate: '2024-02-29',
      limit: 500,
      maxLimit: 500,
      maxInvalidShare: 0.1,
      logLevel: 'debug',
    });
  });

  it('returns a frozen config', () => {
    const config = load(SOURCE_ENV);
    expect(Object.isFrozen(config)).toBe(true);
    expect(() => {
      (config as { concurrency: number }).concurrency = 99;
    }).toThrow(TypeError);
  });

  it('freezes the sources too', () => {
    const config = load(SOURCE_ENV);
    expect(Object.isFrozen(config.sources)).toBe(true);
    expect(config.sources.every((source) => Object.isFrozen(source))).toBe(true);
  });
});

describe('loadConfig errors', () => {
  /** Each invalid value is a canary: it must never show up in the message. */
  const INVALID: Record<string, string> = {
    DATABASE_URL: 'CANARY-VALUE-database-url',
    INSIGHTS_SCHEMA: 'CANARY-VALUE-schema',
    INSIGHTS_EMBEDDED_PORT: 'CANARY-VALUE-port',
    INSIGHTS_CONCURRENCY: 'CANARY-VALUE-concurrency',
    INSIGHTS_LOOKBACK_DAYS: 'CANARY-VALUE-lookback',
    INSIGHTS_START_DATE: 'CANARY-VALUE-start-date',
    INSIGHTS_LIMIT: 'CANARY-VALUE-limit',
    INSIGHTS_MAX_LIMIT: 'CANARY-VALUE-max-limit',
    INSIGHTS_REQUEST_TIMEOUT_MS: 'CANARY-VALUE-timeout',
    INSIGHTS_MAX_ATTEMPTS: 'CANARY-VALUE-attempts',
    INSIGHTS_RETRY_BASE_MS: 'CANARY-VALUE-retry-base',
    INSIGHTS_RETRY_MAX_MS: 'CANARY-VALUE-retry-max',
    INSIGHTS_RETRY_AFTER_CAP_MS: 'CANARY-VALUE-retry-after-cap',
    INSIGHTS_MAX_INVALID_SHARE: 'CANARY-VALUE-invalid-share',
    LOG_LEVEL: 'CANARY-VALUE-log-level',
    INSIGHTS_SOURCE_NAME: 'CANARY VALUE source name',
    INSIGHTS_API_URL: 'CANARY-VALUE-api-url',
  };

  for (const [variable, value] of Object.entries(INVALID)) {
    it(`rejects an invalid ${variable}, naming it and what was expected, never the value`, () => {
      const error = configError(() => load({ ...SOURCE_ENV, [variable]: value }));
      expect(error.problems.map((p) => p.variable)).toEqual([variable]);
      expect(error.problems[0]?.expected).toMatch(/\w/);
      expect(error.message).toContain(`${variable}: ${error.problems[0]?.expected}`);
      expect(error.message).not.toContain('CANARY');
      expect(error.exitCode).toBe(2);
    });
  }

  it.each([
    ['INSIGHTS_CONCURRENCY', '0'],
    ['INSIGHTS_CONCURRENCY', '65'],
    ['INSIGHTS_CONCURRENCY', '2.5'],
    ['INSIGHTS_LOOKBACK_DAYS', '-1'],
    ['INSIGHTS_LOOKBACK_DAYS', '366'],
    ['INSIGHTS_START_DATE', '2026-02-30'],
    ['INSIGHTS_START_DATE', '2026-3-1'],
    ['INSIGHTS_MAX_INVALID_SHARE', '1.5'],
    ['INSIGHTS_SCHEMA', 'Insights'],
    ['INSIGHTS_SCHEMA', 'drop table;'],
    ['INSIGHTS_EMBEDDED_PORT', '80'],
    ['DATABASE_URL', 'mysql://db/warehouse'],
    ['INSIGHTS_API_URL', 'ftp://api.example.com'],
  ])('rejects %s=%s', (variable, value) => {
    const error = configError(() => load({ ...SOURCE_ENV, [variable]: value }));
    expect(error.problems.map((p) => p.variable)).toEqual([variable]);
  });

  it('reports several problems together', () => {
    const error = configError(() =>
      load({ INSIGHTS_CONCURRENCY: 'CANARY-1', LOG_LEVEL: 'CANARY-2', INSIGHTS_START_DATE: 'CANARY-3' }),
    );
    expect(error.problems.map((p) => p.variable).sort()).toEqual([
      'INSIGHTS_API_KEY',
      'INSIGHTS_API_URL',
      'INSIGHTS_CONCURRENCY',
      'INSIGHTS_START_DATE',
      'LOG_LEVEL',
    ]);
    for (const problem of error.problems) expect(error.message).toContain(problem.variable);
    expect(error.message).not.toContain('CANARY');
  });

  it('rejects INSIGHTS_MAX_LIMIT below INSIGHTS_LIMIT', () => {
    const error = configError(() =>
      load({ ...SOURCE_ENV, INSIGHTS_LIMIT: '500', INSIGHTS_MAX_LIMIT: '499' }),
    );
    expect(error.problems).toEqual([
      { variable: 'INSIGHTS_MAX_LIMIT', expected: expect.stringContaining('INSIGHTS_LIMIT') },
    ]);
  });

  it('rejects an INSIGHTS_LIMIT above the default INSIGHTS_MAX_LIMIT', () => {
    const error = configError(() => load({ ...SOURCE_ENV, INSIGHTS_LIMIT: '20000' }));
    expect(error.problems.map((p) => p.variable)).toEqual(['INSIGHTS_MAX_LIMIT']);
  });
});

describe('loadConfig sources from the environment', () => {
  it('requires INSIGHTS_API_URL and INSIGHTS_API_KEY by default', () => {
    const error = configError(() => load({}));
    expect(error.problems.map((p) => p.variable)).toEqual(['INSIGHTS_API_URL', 'INSIGHTS_API_KEY']);
  });

  it('names a setting that is missing as not set, not only what it should hold', () => {
    const error = configError(() =>
      load({ INSIGHTS_API_URL: 'https://api.example.com', INSIGHTS_CONCURRENCY: 'many' }),
    );
    expect(error.message).toBe(
      'invalid configuration: INSIGHTS_API_KEY is not set (the API key of the source); INSIGHTS_CONCURRENCY: an integer 1-64',
    );
    expect(configError(() => load({ INSIGHTS_API_KEY: 'key-123' })).message).toMatch(
      /^invalid configuration: INSIGHTS_API_URL is not set \(the base URL of the API/,
    );
  });

  it('needs no source when requireSources is false', () => {
    expect(load({}, { requireSources: false }).sources).toEqual([]);
  });

  it('still rejects half a source when requireSources is false', () => {
    const error = configError(() =>
      load({ INSIGHTS_API_URL: 'https://api.example.com' }, { requireSources: false }),
    );
    expect(error.problems.map((p) => p.variable)).toEqual(['INSIGHTS_API_KEY']);
  });

  it('never puts the API key in an error', () => {
    const error = configError(() =>
      load({
        INSIGHTS_API_KEY: 'CANARY-VALUE-secret-key',
        INSIGHTS_API_URL: 'not a url',
        INSIGHTS_LIMIT: 'x',
      }),
    );
    expect(error.message).not.toContain('CANARY');
  });

  it('names the source with INSIGHTS_SOURCE_NAME', () => {
    expect(load({ ...SOURCE_ENV, INSIGHTS_SOURCE_NAME: 'shop-eu' }).sources[0]?.name).toBe('shop-eu');
  });
});

describe('loadConfig sources from INSIGHTS_CONFIG', () => {
  const fileEnv = (extra: Env = {}): Env => ({ INSIGHTS_CONFIG: '/etc/insights.json', ...extra });
  const fileWith = (content: unknown) => () => JSON.stringify(content);

  it('reads several sources, the key given directly or through api_key_env', () => {
    const config = load(fileEnv({ SHOP_US_KEY: 'key-us' }), {
      readFile: fileWith({
        sources: [
          { name: 'shop-eu', base_url: 'https://eu.api.example.com/', api_key: 'key-eu' },
          { name: 'shop-us', base_url: 'http://us.api.example.com', api_key_env: 'SHOP_US_KEY' },
        ],
      }),
    });
    expect(config.sources).toEqual([
      { name: 'shop-eu', baseUrl: 'https://eu.api.example.com', apiKey: 'key-eu' },
      { name: 'shop-us', baseUrl: 'http://us.api.example.com', apiKey: 'key-us' },
    ]);
  });

  it('takes the file over INSIGHTS_API_URL', () => {
    const config = load(fileEnv(SOURCE_ENV), {
      readFile: fileWith({ sources: [{ name: 'a', base_url: 'https://a.example.com', api_key: 'k' }] }),
    });
    expect(config.sources.map((s) => s.name)).toEqual(['a']);
  });

  it('reads the path named by INSIGHTS_CONFIG', () => {
    const paths: string[] = [];
    load(fileEnv(), {
      readFile: (path) => {
        paths.push(path);
        return JSON.stringify({ sources: [{ name: 'a', base_url: 'https://a.example.com', api_key: 'k' }] });
      },
    });
    expect(paths).toEqual(['/etc/insights.json']);
  });

  it('rejects an api_key_env naming an unset variable, naming that variable', () => {
    const error = configError(() =>
      load(fileEnv(), {
        readFile: fileWith({
          sources: [{ name: 'a', base_url: 'https://a.example.com', api_key_env: 'MISSING_KEY' }],
        }),
      }),
    );
    expect(error.problems.map((p) => p.variable)).toEqual(['MISSING_KEY']);
  });

  it('rejects a source with no key at all', () => {
    const error = configError(() =>
      load(fileEnv(), {
        readFile: fileWith({ sources: [{ name: 'a', base_url: 'https://a.example.com' }] }),
      }),
    );
    expect(error.problems.map((p) => p.variable)).toEqual(['INSIGHTS_CONFIG sources[0].api_key']);
  });

  it('rejects unknown keys, at the top and inside a source', () => {
    const error = configError(() =>
      load(fileEnv(), {
        readFile: fileWith({
          sources: [
            { name: 'a', base_url: 'https://a.example.com', api_key: 'k', apikey: 'CANARY-VALUE-typo' },
          ],
          concurrency: 4,
        }),
      }),
    );
    const variables = error.problems.map((p) => p.variable);
    expect(variables).toContain('INSIGHTS_CONFIG sources[0]');
    expect(variables).toContain('INSIGHTS_CONFIG');
    expect(error.message).toContain('apikey');
    expect(error.message).toContain('concurrency');
    expect(error.message).not.toContain('CANARY');
  });

  it('rejects duplicate source names', () => {
    const error = configError(() =>
      load(fileEnv(), {
        readFile: fileWith({
          sources: [
            { name: 'shop', base_url: 'https://a.example.com', api_key: 'k1' },
            { name: 'shop', base_url: 'https://b.example.com', api_key: 'k2' },
          ],
        }),
      }),
    );
    expect(error.problems.map((p) => p.variable)).toEqual(['INSIGHTS_CONFIG sources[1].name']);
  });

  it('rejects an empty source list, a bad name and a non-http base_url, without echoing values', () => {
    expect(configError(() => load(fileEnv(), { readFile: fileWith({ sources: [] }) })).problems).toHaveLength(
      1,
    );
    const error = configError(() =>
      load(fileEnv(), {
        readFile: fileWith({
          sources: [{ name: 'CANARY VALUE name', base_url: 'ftp://CANARY-VALUE.example.com', api_key: 'k' }],
        }),
      }),
    );
    expect(error.problems.map((p) => p.variable).sort()).toEqual([
      'INSIGHTS_CONFIG sources[0].base_url',
      'INSIGHTS_CONFIG sources[0].name',
    ]);
    expect(error.message).not.toContain('CANARY');
  });

  it('reports a file that cannot be read, or is not JSON, as INSIGHTS_CONFIG', () => {
    for (const readFile of [noFile, () => '{ "sources": [ CANARY-VALUE-not-json']) {
      const error = configError(() => load(fileEnv(), { readFile }));
      expect(error.problems.map((p) => p.variable)).toEqual(['INSIGHTS_CONFIG']);
      expect(error.message).not.toContain('CANARY');
    }
  });

  it('reports file problems together with environment problems', () => {
    const error = configError(() =>
      load(fileEnv({ INSIGHTS_CONCURRENCY: '0' }), { readFile: fileWith({ sources: [{ name: 'a' }] }) }),
    );
    const variables = error.problems.map((p) => p.variable);
    expect(variables).toContain('INSIGHTS_CONCURRENCY');
    expect(variables).toContain('INSIGHTS_CONFIG sources[0].base_url');
  });
});

describe('the base URL: what cannot work is refused at config time, never quoted', () => {
  it.each([
    ['credentials', 'http://user:CANARY-VALUE-password@api.example.com', 'without credentials'],
    ['a user name alone', 'https://CANARY-VALUE-user@api.example.com', 'without credentials'],
    ['a trailing /v1', 'https://api.example.com/v1', 'without the trailing /v1'],
    ['a trailing /v1/', 'https://api.example.com/v1/', 'without the trailing /v1'],
    ['a query string', 'https://api.example.com/?token=CANARY-VALUE', 'without a query string'],
    ['not a URL', 'CANARY-VALUE', 'an http(s) URL'],
  ])('refuses INSIGHTS_API_URL with %s', (_name, value, expected) => {
    const error = configError(() => load({ ...SOURCE_ENV, INSIGHTS_API_URL: value }));
    expect(error.problems).toEqual([
      { variable: 'INSIGHTS_API_URL', expected: expect.stringContaining(expected) },
    ]);
    expect(error.message).toContain('INSIGHTS_API_URL');
    expect(error.message).not.toContain('CANARY');
    expect(error.exitCode).toBe(2);
  });

  it('refuses credentials and /v1 in a file base_url too, naming the source', () => {
    const error = configError(() =>
      load(
        { INSIGHTS_CONFIG: '/etc/insights.json' },
        {
          readFile: () =>
            JSON.stringify({
              sources: [
                { name: 'a', base_url: 'https://u:CANARY-VALUE@a.example.com', api_key: 'k' },
                { name: 'b', base_url: 'https://b.example.com/api/v1', api_key: 'k' },
                { name: 'c', base_url: 'https://c.example.com/api/', api_key: 'k' },
              ],
            }),
        },
      ),
    );
    expect(error.problems.map((p) => p.variable)).toEqual([
      'INSIGHTS_CONFIG sources[0].base_url',
      'INSIGHTS_CONFIG sources[1].base_url',
    ]);
    expect(error.message).not.toContain('CANARY');
  });

  it('keeps a path prefix that is not /v1 (a proxy), without its trailing slash', () => {
    expect(
      load({ ...SOURCE_ENV, INSIGHTS_API_URL: 'https://gw.example.com/insights/' }).sources[0]?.baseUrl,
    ).toBe('https://gw.example.com/insights');
  });
});

describe('the request budget: INSIGHTS_SOURCE_RPS and requests_per_second', () => {
  const fileEnv = (extra: Env = {}): Env => ({ INSIGHTS_CONFIG: '/etc/insights.json', ...extra });
  const sourcesFile =
    (...sources: Record<string, unknown>[]) =>
    () =>
      JSON.stringify({
        sources: sources.map((extra, i) => ({
          name: `s${i + 1}`,
          base_url: 'https://api.example.com',
          api_key: 'k',
          ...extra,
        })),
      });

  it('has none by default: no source has a budget', () => {
    const config = load(SOURCE_ENV);
    expect(config.sourceRps).toBe(0);
    expect(config.sources[0]?.requestsPerSecond).toBeUndefined();
  });

  it('gives every source INSIGHTS_SOURCE_RPS, decimals allowed', () => {
    expect(load({ ...SOURCE_ENV, INSIGHTS_SOURCE_RPS: '0.5' }).sources[0]?.requestsPerSecond).toBe(0.5);
    const config = load(fileEnv({ INSIGHTS_SOURCE_RPS: '4' }), { readFile: sourcesFile({}, {}) });
    expect(config.sources.map((s) => s.requestsPerSecond)).toEqual([4, 4]);
  });

  it("lets a source's requests_per_second win, 0 meaning no budget for that source", () => {
    const config = load(fileEnv({ INSIGHTS_SOURCE_RPS: '4' }), {
      readFile: sourcesFile({ requests_per_second: 1.5 }, { requests_per_second: 0 }, {}),
    });
    expect(config.sources.map((s) => s.requestsPerSecond)).toEqual([1.5, undefined, 4]);
    const without = load(fileEnv(), { readFile: sourcesFile({ requests_per_second: 2 }, {}) });
    expect(without.sources.map((s) => s.requestsPerSecond)).toEqual([2, undefined]);
  });

  it.each(['-1', '1e3', '0x10', '4 rps', '0.001', '1001', '.5'])(
    'rejects INSIGHTS_SOURCE_RPS=%s',
    (value) => {
      const error = configError(() => load({ ...SOURCE_ENV, INSIGHTS_SOURCE_RPS: value }));
      expect(error.problems.map((p) => p.variable)).toEqual(['INSIGHTS_SOURCE_RPS']);
      expect(error.problems[0]?.expected).toMatch(/requests per second per source/);
    },
  );

  it.each([[-1], [0.001], [1001], ['4']])('rejects requests_per_second: %j, naming the source', (value) => {
    const error = configError(() =>
      load(fileEnv(), { readFile: sourcesFile({}, { requests_per_second: value }) }),
    );
    expect(error.problems.map((p) => p.variable)).toEqual(['INSIGHTS_CONFIG sources[1].requests_per_second']);
    expect(error.problems[0]?.expected).toMatch(/requests per second per source/);
  });
});

describe("a source's expected_allocation (the declared split of its tests)", () => {
  const fileEnv: Env = { INSIGHTS_CONFIG: '/etc/insights.json' };
  const sourcesFile = (extra: Record<string, unknown>) => () =>
    JSON.stringify({
      sources: [{ name: 's1', base_url: 'https://api.example.com', api_key: 'k', ...extra }],
    });

  it('is unset by default: no test is checked', () => {
    expect(load(fileEnv, { readFile: sourcesFile({}) }).sources[0]?.expectedAllocation).toBeUndefined();
  });

  it('takes a default and per-test weights', () => {
    const allocation = { default: 'equal', tests: { t1: { control: 70, 'variant 1': 30 } } };
    const config = load(fileEnv, { readFile: sourcesFile({ expected_allocation: allocation }) });
    expect(config.sources[0]?.expectedAllocation).toEqual(allocation);
  });

  it.each([
    [{ default: 'even' }],
    [{ default: { control: 0 } }],
    [{ default: { control: -1 } }],
    [{ default: {} }],
    [{ tests: { t1: { control: '70' } } }],
    [{ weights: 'equal' }],
  ])('rejects %j, naming the source', (allocation) => {
    const error = configError(() =>
      load(fileEnv, { readFile: sourcesFile({ expected_allocation: allocation }) }),
    );
    expect(error.problems.map((p) => p.variable)[0]).toMatch(
      /^INSIGHTS_CONFIG sources\[0\]\.expected_allocation/,
    );
  });
});
