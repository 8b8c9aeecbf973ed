import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { checkPiiKey } from '../../src/config/pii-key.js';

/**
 * The key rule must never refuse a key made as the README says, and must refuse the weak ones.
 * Random keys: 500 of each form the README and the docs name, fresh each run (a seed would prove
 * less: the point is that no draw fails), through the whole rule, digest look-up included. A
 * random key is refused by chance about once in 10^9 keys or less (pii-key.ts counts each rule's
 * odds; the words of a base64 key: none in 300,000 draws), so a refusal among these 2,500 is a
 * bug in a rule, not bad luck. The weak keys: the catalogue below, each refused for its own
 * reason. About a second of CPU (under a millisecond a key once the digest table is built), where
 * the 10,000 zxcvbn estimates this file drew before took minutes.
 */
const DRAWS = 500;

const FORMS = {
  'openssl rand -hex 32': () => randomBytes(32).toString('hex'),
  'openssl rand -base64 32': () => randomBytes(32).toString('base64'),
  'openssl rand -hex 64': () => randomBytes(64).toString('hex'),
  'openssl rand -base64 48': () => randomBytes(48).toString('base64'),
  'URL-safe base64 of 32 bytes': () => randomBytes(32).toString('base64url'),
};

const sha = (algorithm: string, text: string, encoding: 'hex' | 'base64') =>
  createHash(algorithm).update(text).digest(encoding);

/** Keys people write instead of random bytes, and the reason each must be refused for. */
const WEAK = {
  'a phrase (the finding)': ['Lorem ipsum dolor sit amet, consectetur adipiscing', 'not-encoded'],
  'base64 of an English phrase (the finding)': [
    Buffer.from('we keep the visitors data safe with this key').toString('base64'),
    'text',
  ],
  "hex of sha256('password') (the finding)": [sha('sha256', 'password', 'hex'), 'digest'],
  // 36 characters of base64's URL-safe alphabet: 27 bytes.
  'a placeholder': ['change-me-to-a-random-32-char-secret', 'too-short'],
  'words and a year': ['ThisIsMyVerySecretPiiKey!2026abc', 'not-encoded'],
  'a keyboard walk': ['zaq1xsw2cde3vfr4bgt5nhy6mju7,ki8', 'not-encoded'],
  '32 spaces': [' '.repeat(32), 'not-encoded'],
  'openssl rand -base64 24 (32 characters, 24 bytes)': [randomBytes(24).toString('base64'), 'too-short'],
  'hex of md5 (16 bytes)': [sha('md5', 'password', 'hex'), 'too-short'],
  'words in base64 letters': ['InsightsSyncPiiKeyProductionSecretValue2026x', 'words'],
  'hex of an English phrase': [Buffer.from('our secret pii key, do not share').toString('hex'), 'text'],
  'base64 of a sha256 written in hex': [
    Buffer.from(sha('sha256', 'letmein', 'hex')).toString('base64'),
    'text',
  ],
  'the alphabet, in hex': [Buffer.from('abcdefghijklmnopqrstuvwxyz012345').toString('hex'), 'text'],
  'bytes counting up': [Buffer.from(Array.from({ length: 32 }, (_, i) => i)).toString('hex'), 'pattern'],
  'a block repeated': ['0123456789abcdef'.repeat(4), 'pattern'],
  'one byte': ['ff'.repeat(32), 'pattern'],
  "sha256('password\\n') in base64 (echo password | openssl dgst -sha256 -binary | base64)": [
    sha('sha256', 'password\n', 'base64'),
    'digest',
  ],
  "sha512('123456')": [sha('sha512', '123456', 'hex'), 'digest'],
  "sha256('welcome')": [sha('sha256', 'welcome', 'base64'), 'digest'],
} as const;

describe('INSIGHTS_PII_KEY: random keys pass the rule, weak ones do not', () => {
  it.each(Object.keys(FORMS))(`%s: ${DRAWS} draws, every one accepted`, (form) => {
    const draw = FORMS[form as keyof typeof FORMS];
    const refused: string[] = [];
    for (let i = 0; i < DRAWS; i++) {
      const verdict = checkPiiKey(draw());
      // The reasons only, never a key.
      if (!verdict.ok) refused.push(verdict.refusal);
    }
    expect(refused).toEqual([]);
  });

  it('the catalogue of weak keys: each refused, for its own reason', () => {
    const reasons = Object.fromEntries(
      Object.entries(WEAK).map(([name, [key]]) => {
        const verdict = checkPiiKey(key);
        return [name, verdict.ok ? 'accepted' : verdict.refusal];
      }),
    );
    expect(reasons).toEqual(
      Object.fromEntries(Object.entries(WEAK).map(([name, [, reason]]) => [name, reason])),
    );
  });
});
