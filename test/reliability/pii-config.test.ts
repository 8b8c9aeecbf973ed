import { describe, expect, it } from 'vitest';
import { type Env, loadConfig } from '../../src/config/config.js';
import { ConfigError } from '../../src/errors.js';

const SOURCE: Env = { INSIGHTS_API_URL: 'https://api.example.test', INSIGHTS_API_KEY: 'k' };
const KEY = 'k'.repeat(32);
const now = () => new Date('2026-03-10T00:00:00.000Z');

function problems(env: Env, file?: unknown): string[] {
  try {
    loadConfig({ env, now, readFile: () => JSON.stringify(file) });
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems.map((p) => p.variable);
  }
  return [];
}

describe('the pii settings', () => {
  it('default keep: the sources carry no policy, and no key is needed', () => {
    const config = loadConfig({ env: SOURCE, now });
    expect(config.sources[0]?.pii).toBeUndefined();
    expect(config.piiKey).toBeUndefined();
    expect(loadConfig({ env: { ...SOURCE, INSIGHTS_PII: 'keep', INSIGHTS_PII_KEY: '' }, now })).toEqual(
      config,
    );
  });

  it('hash and drop need INSIGHTS_PII_KEY, of at least 32 characters, taken as given', () => {
    expect(problems({ ...SOURCE, INSIGHTS_PII: 'hash' })).toEqual(['INSIGHTS_PII_KEY']);
    expect(problems({ ...SOURCE, INSIGHTS_PII: 'drop', INSIGHTS_PII_KEY: 'k'.repeat(31) })).toEqual([
      'INSIGHTS_PII_KEY',
    ]);
    expect(problems({ ...SOURCE, INSIGHTS_PII: 'HASH', INSIGHTS_PII_KEY: KEY })).toEqual(['INSIGHTS_PII']);
    const config = loadConfig({
      env: { ...SOURCE, INSIGHTS_PII: 'drop', INSIGHTS_PII_KEY: ` ${KEY} ` },
      now,
    });
    expect(config.sources[0]?.pii).toEqual({ mode: 'drop', key: ` ${KEY} ` });
    expect(config.piiKey).toBe(` ${KEY} `);
    expect(Object.isFrozen(config.sources[0]?.pii)).toBe(true);
  });

  it('a short key is an error even when no source hashes (it is checked whenever it is set)', () => {
    expect(problems({ ...SOURCE, INSIGHTS_PII_KEY: 'short' })).toEqual(['INSIGHTS_PII_KEY']);
  });

  it('per source in INSIGHTS_CONFIG; the key is asked for once; INSIGHTS_PII must then be unset', () => {
    const file = {
      sources: [
        { name: 'a', base_url: 'https://a.example.test', api_key: 'k', pii: 'hash' },
        { name: 'b', base_url: 'https://b.example.test', api_key: 'k', pii: 'drop' },
        { name: 'c', base_url: 'https://c.example.test', api_key: 'k' },
      ],
    };
    expect(problems({ INSIGHTS_CONFIG: 'sources.json' }, file)).toEqual(['INSIGHTS_PII_KEY']);
    expect(
      problems({ INSIGHTS_CONFIG: 'sources.json', INSIGHTS_PII_KEY: KEY, INSIGHTS_PII: 'hash' }, file),
    ).toEqual(['INSIGHTS_PII']);
    const config = loadConfig({
      env: { INSIGHTS_CONFIG: 'sources.json', INSIGHTS_PII_KEY: KEY },
      now,
      readFile: () => JSON.stringify(file),
    });
    expect(config.sources.map((s) => s.pii?.mode ?? 'keep')).toEqual(['hash', 'drop', 'keep']);
    const wrong = { sources: [{ name: 'a', base_url: 'https://a.example.test', api_key: 'k', pii: 'mask' }] };
    expect(problems({ INSIGHTS_CONFIG: 'sources.json' }, wrong)).toEqual(['INSIGHTS_CONFIG sources[0].pii']);
  });

  it('migrate, status and forget (no source needed) still check the key when it is set', () => {
    expect(() => loadConfig({ env: { INSIGHTS_PII_KEY: KEY }, now, requireSources: false })).not.toThrow();
    expect(problems({ INSIGHTS_PII: 'drop', INSIGHTS_PII_KEY: 'short' })).toContain('INSIGHTS_PII_KEY');
  });
});
