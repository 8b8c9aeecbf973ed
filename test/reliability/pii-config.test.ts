import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import type { Env } from '../../src/config/env-settings.js';
import { ConfigError } from '../../src/errors.js';
import { protectPersonalData } from '../../src/privacy/pii.js';

const SOURCE: Env = { INSIGHTS_API_URL: 'https://api.example.test', INSIGHTS_API_KEY: 'k' };
// As `openssl rand -hex 32` prints it.
const KEY = '3f9a1c0e7b52d4a86e0f19c3b7a2d5e48c61f0a9b3d7e2c5a4f8061b9d3e7c2a';
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

  it('hash and drop need INSIGHTS_PII_KEY, a strong one, taken as given', () => {
    expect(problems({ ...SOURCE, INSIGHTS_PII: 'hash' })).toEqual(['INSIGHTS_PII_KEY']);
    expect(problems({ ...SOURCE, INSIGHTS_PII: 'drop', INSIGHTS_PII_KEY: KEY.slice(0, 31) })).toEqual([
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

  it('without the digest look-up (commands that never hash): every other rule still decides', () => {
    // Hex of sha256('password'): only the look-up refuses it.
    const known = '5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8';
    const env = { ...SOURCE, INSIGHTS_PII: 'hash', INSIGHTS_PII_KEY: known };
    expect(problems(env)).toEqual(['INSIGHTS_PII_KEY']);
    const config = loadConfig({ env, now, lookUpPiiKeyDigests: false });
    expect(config.sources[0]?.pii).toEqual({ mode: 'hash', key: known });
    expect(() =>
      loadConfig({ env: { ...env, INSIGHTS_PII_KEY: 'short' }, now, lookUpPiiKeyDigests: false }),
    ).toThrow(ConfigError);
  });
});

describe('INSIGHTS_PII_KEY must be random bytes (the rule: test/config/pii-key.test.ts)', () => {
  /** The one line of the ConfigError, or undefined when the key is accepted. */
  const refusal = (key: string) => {
    try {
      loadConfig({ env: { ...SOURCE, INSIGHTS_PII: 'hash', INSIGHTS_PII_KEY: key }, now });
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      const { message, problems } = error as ConfigError;
      expect(problems.map((p) => p.variable)).toEqual(['INSIGHTS_PII_KEY']);
      // Never the value, not even a part of it.
      if (key.trim() !== '') expect(message).not.toContain(key.trim().slice(0, 12));
      expect(message.split('\n')).toHaveLength(1);
      return message;
    }
    return undefined;
  };

  it("refuses the finding's keys with one line: what is wrong, the rule, the command, how to replace a key", () => {
    const keys = {
      'a phrase': 'Lorem ipsum dolor sit amet, consectetur adipiscing',
      'base64 of an English phrase': Buffer.from('the secret key for our visitors pii hashing').toString(
        'base64',
      ),
      "hex of sha256('password')": '5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8',
      'words in base64 letters': 'ThisIsTheSecretKeyOfOurCompanyForHashingPii1',
      'a repeated block': 'deadbeef'.repeat(8),
      'the finding of an earlier round: 32 spaces': ' '.repeat(32),
      'too short, however random': randomBytes(24).toString('base64'),
    };
    for (const [name, key] of Object.entries(keys)) {
      const line = refusal(key);
      expect(line, name).toMatch(/^invalid configuration: INSIGHTS_PII_KEY: refused: /);
      expect(line, name).toContain('at least 32 random bytes written in hex or base64');
      expect(line, name).toContain('`openssl rand -hex 32`');
      expect(line, name).toContain('README "Changing INSIGHTS_PII_KEY"');
    }
  });

  it('refuses keys an earlier version accepted, each with its reason', () => {
    // Each passed the character checks and the zxcvbn estimate of the earlier versions.
    // 43 characters of base64's URL-safe alphabet: valid base64 of 32 bytes, but words.
    expect(refusal('The-quick-brown-fox-jumps-over-the-lazy-dog')).toContain('spells words');
    expect(refusal('Lorem ipsum dolor sit amet, consectetur adipiscing')).toContain('not hex or base64');
    expect(
      refusal(Buffer.from('correct horse battery staple makes a good key').toString('base64')),
    ).toContain('decodes to text');
    expect(refusal('5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8')).toContain(
      'digest of a common password',
    );
  });

  it('accepts random keys (20 draws of each form; 500 of each in pii-key.trials.ts)', () => {
    const forms = {
      'openssl rand -hex 32': () => randomBytes(32).toString('hex'),
      'openssl rand -base64 32': () => randomBytes(32).toString('base64'),
    };
    for (const [name, draw] of Object.entries(forms)) {
      for (let i = 0; i < 20; i++) expect(refusal(draw()), name).toBeUndefined();
    }
    const config = loadConfig({ env: { ...SOURCE, INSIGHTS_PII: 'hash', INSIGHTS_PII_KEY: KEY }, now });
    expect(config.piiKey).toBe(KEY);
  });

  it('is checked whenever it is set, also under keep', () => {
    expect(problems({ ...SOURCE, INSIGHTS_PII_KEY: 'deadbeef'.repeat(8) })).toEqual(['INSIGHTS_PII_KEY']);
  });
});

describe('INSIGHTS_PII_EXTRA_KEYS', () => {
  it('adds keys (normalized) to the personal ones of every source that hashes or drops', () => {
    const config = loadConfig({
      env: {
        ...SOURCE,
        INSIGHTS_PII: 'drop',
        INSIGHTS_PII_KEY: KEY,
        INSIGHTS_PII_EXTRA_KEYS: 'Birth-Day, postal_code',
      },
      now,
    });
    const pii = config.sources[0]?.pii;
    expect(pii?.mode).toBe('drop');
    expect(pii !== undefined && pii.mode !== 'keep' ? [...(pii.extraKeys ?? [])] : []).toEqual([
      'birthday',
      'postalcode',
    ]);
    expect(protectPersonalData({ BIRTHDAY: '1970-01-01', postalCode: '10115', city: 'Berlin' }, pii)).toEqual(
      {
        BIRTHDAY: null,
        postalCode: null,
        city: 'Berlin',
      },
    );
  });

  it('refuses an empty entry', () => {
    expect(problems({ ...SOURCE, INSIGHTS_PII_EXTRA_KEYS: 'birthday,,zip' })).toEqual([
      'INSIGHTS_PII_EXTRA_KEYS',
    ]);
    expect(problems({ ...SOURCE, INSIGHTS_PII_EXTRA_KEYS: ' - ' })).toEqual(['INSIGHTS_PII_EXTRA_KEYS']);
  });
});
