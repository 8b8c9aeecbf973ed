import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import type { Env } from '../../src/config/env-settings.js';
import { isStrongPiiKey, passesCharacterChecks } from '../../src/config/pii-key.js';
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

  it('without the estimate (commands that never hash): the character checks alone decide', () => {
    // Passes the character checks, fails the estimate (a phrase of words and a year).
    const guessable = 'ThisIsMyVerySecretPiiKey!2026abc';
    const env = { ...SOURCE, INSIGHTS_PII: 'hash', INSIGHTS_PII_KEY: guessable };
    expect(problems(env)).toEqual(['INSIGHTS_PII_KEY']);
    const config = loadConfig({ env, now, estimatePiiKey: false });
    expect(config.sources[0]?.pii).toEqual({ mode: 'hash', key: guessable });
    expect(() =>
      loadConfig({ env: { ...env, INSIGHTS_PII_KEY: 'short' }, now, estimatePiiKey: false }),
    ).toThrow(ConfigError);
  });
});

describe('INSIGHTS_PII_KEY must carry real entropy', () => {
  const refused = (key: string) => {
    try {
      loadConfig({ env: { ...SOURCE, INSIGHTS_PII: 'hash', INSIGHTS_PII_KEY: key }, now });
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      const { message, problems } = error as ConfigError;
      expect(problems.map((p) => p.variable)).toEqual(['INSIGHTS_PII_KEY']);
      expect(message).toContain('a random secret such as `openssl rand -hex 32`');
      // Never the value, not even a part of it.
      if (key.trim() !== '') expect(message).not.toContain(key.slice(0, 12));
      expect(message.split('\n')).toHaveLength(1);
      return true;
    }
    return false;
  };

  it('refuses weak keys: too short, too few characters, one kind, a repeated block, low entropy', () => {
    const weak = {
      'the finding: 32 spaces': ' '.repeat(32),
      'the finding: a word repeated': 'passwordpasswordpasswordpassword',
      'one character': 'k'.repeat(64),
      'too short, however random': randomBytes(15).toString('hex'),
      'letters only (one kind)': 'abcdefghijklmnopqrstuvwxyzabcdefghij',
      'digits only (one kind)': '01234567890123456789012345678901234567',
      'a repeated block': 'Tr0ub4dor&3Tr0ub4dor&3Tr0ub4dor&3',
      'a repeated block of 17 different characters': 'ABCDEFGHIJKLMNOP1ABCDEFGHIJKLMNOP1',
      'few different characters': 'aaaaaaaaaaaaaaaaaaaaaaaa0123456789',
      'low entropy (one character dominates)': `${'a'.repeat(60)}0123456789AB`,
      'longer than 4096': randomBytes(2049).toString('hex'),
    };
    for (const [name, key] of Object.entries(weak)) expect(refused(key), name).toBe(true);
  });

  it('refuses guessable keys: words, sequences, keyboard walks, a phrase, a placeholder', () => {
    const guessable = {
      'the finding: the alphabet and digits': 'abcdefghijklmnopqrstuvwxyz012345',
      'the finding: the placeholder of a template': 'change-me-to-a-random-32-char-secret',
      'a keyboard walk, row by row': 'qwertyuiopasdfghjklzxcvbnm123456',
      'a keyboard walk, column by column': '1qaz2wsx3edc4rfv5tgb6yhn7ujm8ik,',
      'a keyboard walk, up the columns': 'zaq1xsw2cde3vfr4bgt5nhy6mju7,ki8',
      'words, a year and a sequence': 'ThisIsMyVerySecretPiiKey!2026abc',
      'a name of the tool and a year': 'insights-sync-pii-key-production-2026',
      'l33t passwords': 'P@ssw0rd!P@ssw0rd!Welcome1Summer2024',
    };
    for (const [name, key] of Object.entries(guessable)) {
      // Each passes the character checks alone: only the estimator refuses it.
      expect(passesCharacterChecks(key), name).toBe(true);
      expect(refused(key), name).toBe(true);
    }
  });

  it('the character checks accept openssl rand -hex 32 and -base64 32 output, every time (10,000 draws each)', () => {
    for (let i = 0; i < 10_000; i++) {
      expect(passesCharacterChecks(randomBytes(32).toString('hex'))).toBe(true);
      expect(passesCharacterChecks(randomBytes(32).toString('base64'))).toBe(true);
    }
  });

  it('accepts random keys as a whole, estimator included (20 draws of each form; 10,000 in pii-key.trials.ts)', () => {
    const forms = {
      'openssl rand -hex 32': () => randomBytes(32).toString('hex'),
      'openssl rand -base64 32': () => randomBytes(32).toString('base64'),
      'openssl rand -base64 24 (32 characters, the shortest allowed)': () =>
        randomBytes(24).toString('base64'),
    };
    for (const [name, draw] of Object.entries(forms)) {
      for (let i = 0; i < 20; i++) expect(isStrongPiiKey(draw()), name).toBe(true);
    }
    expect(refused(randomBytes(32).toString('base64'))).toBe(false);
    const config = loadConfig({ env: { ...SOURCE, INSIGHTS_PII: 'hash', INSIGHTS_PII_KEY: KEY }, now });
    expect(config.piiKey).toBe(KEY);
    // About 50 ms of CPU a key: 60 of them take seconds on a busy machine.
  }, 120_000);

  it('is checked whenever it is set, also under keep', () => {
    expect(problems({ ...SOURCE, INSIGHTS_PII_KEY: 'passwordpasswordpasswordpassword' })).toEqual([
      'INSIGHTS_PII_KEY',
    ]);
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
