import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { checkPiiKey, describePiiKeyRefusal, type PiiKeyRefusal } from '../../src/config/pii-key.js';

const refusalOf = (key: string, lookUpDigests = true) => {
  const verdict = checkPiiKey(key, lookUpDigests);
  return verdict.ok ? 'accepted' : verdict.refusal;
};
const hex = (text: string) => Buffer.from(text).toString('hex');
const base64 = (text: string) => Buffer.from(text).toString('base64');
const digest = (algorithm: string, text: string, encoding: 'hex' | 'base64') =>
  createHash(algorithm).update(text).digest(encoding);

describe('INSIGHTS_PII_KEY: at least 32 random bytes, in hex or base64, as openssl rand prints them', () => {
  it('accepts what openssl rand -hex 32 and -base64 32 print (and longer, and URL-safe base64)', () => {
    const forms = {
      'openssl rand -hex 32': () => randomBytes(32).toString('hex'),
      'openssl rand -base64 32': () => randomBytes(32).toString('base64'),
      'openssl rand -hex 64': () => randomBytes(64).toString('hex'),
      'openssl rand -base64 48': () => randomBytes(48).toString('base64'),
      'upper-case hex': () => randomBytes(32).toString('hex').toUpperCase(),
      'URL-safe base64 without padding (Python secrets.token_urlsafe(32))': () =>
        randomBytes(32).toString('base64url'),
      'a trailing newline, as a secret file holds it': () => `${randomBytes(32).toString('hex')}\n`,
    };
    for (const [name, draw] of Object.entries(forms)) {
      for (let i = 0; i < 50; i++) expect(refusalOf(draw()), name).toBe('accepted');
    }
  });

  it("refuses the finding's three keys: a phrase, base64 of a phrase, hex of sha256('password')", () => {
    expect(refusalOf('Lorem ipsum dolor sit amet, consectetur adipiscing')).toBe('not-encoded');
    expect(refusalOf(base64('correct horse battery staple makes a good key'))).toBe('text');
    expect(refusalOf(digest('sha256', 'password', 'hex'))).toBe('digest');
  });

  it('refuses a key that is neither hex nor base64', () => {
    for (const key of [
      'ThisIsMyVerySecretPiiKey!2026abc',
      'change-me-to-a-random-32-char-secret!',
      `${randomBytes(32).toString('hex')}g`,
      `${randomBytes(32).toString('hex')}0`, // odd number of hex digits
      `${randomBytes(32).toString('base64')}=`, // padding where none belongs
      `${randomBytes(16).toString('hex')} ${randomBytes(16).toString('hex')}`,
      `${randomBytes(16).toString('base64url')}+${randomBytes(16).toString('base64url')}`, // both alphabets
    ])
      expect(refusalOf(key), key).toBe('not-encoded');
  });

  it('refuses fewer than 32 bytes once decoded, however random (64 base64 characters of 47 bytes pass)', () => {
    expect(refusalOf(randomBytes(31).toString('hex'))).toBe('too-short');
    expect(refusalOf(randomBytes(24).toString('base64'))).toBe('too-short'); // 32 characters, 24 bytes
    expect(refusalOf(digest('sha1', 'password', 'hex'))).toBe('too-short');
    expect(refusalOf(randomBytes(32).toString('hex'))).toBe('accepted');
  });

  it('refuses more than 4096 characters', () => {
    expect(refusalOf(randomBytes(2049).toString('hex'))).toBe('too-long');
    expect(refusalOf(randomBytes(2048).toString('hex'))).toBe('accepted');
  });

  it('refuses words written in base64 letters (valid base64, but decoding to noise hides nothing)', () => {
    for (const key of [
      'insightssyncpiikeyproductionsecretvalue2026x',
      'ThisIsTheSecretKeyOfOurCompanyForHashingPii1',
      'correcthorsebatterystaplecorrecthorsebattery',
      'MyCompanyNameIsAcmeAndThisIsOurPiiKey2026xyz',
    ]) {
      expect(checkPiiKey(key, false), key).toEqual({ ok: false, refusal: 'words' });
    }
  });

  it('refuses hex or base64 of text: phrases, words, a hex digest written as text, UTF-8 text', () => {
    const texts = {
      'base64 of an English phrase': base64('the secret key for our visitors pii hashing'),
      'hex of an English phrase': hex('the secret key for our visitors pii hashing'),
      'base64 of the hex of a sha256 (echo -n password | sha256sum | base64)': base64(
        digest('sha256', 'password', 'hex'),
      ),
      'base64 of lorem ipsum': base64('Lorem ipsum dolor sit amet, consectetur adipiscing'),
      'base64 of German text': base64('Geheimer Schlüssel für die Besucherdaten, bitte ändern'),
      'hex of Japanese text': hex('訪問者の個人情報を守るための秘密の鍵です'),
    };
    for (const [name, key] of Object.entries(texts)) expect(refusalOf(key), name).toBe('text');
  });

  it('refuses decoded bytes with a pattern: a repeated block, a sequence, few values, one value dominating', () => {
    const block = randomBytes(8);
    const patterns = {
      'all zeros': '0'.repeat(64),
      'deadbeef eight times': 'deadbeef'.repeat(8),
      'a random 8-byte block four times': Buffer.concat([block, block, block, block]).toString('hex'),
      'a random 16-byte block twice': (() => {
        const half = randomBytes(16);
        return Buffer.concat([half, half]).toString('base64');
      })(),
      'counting up 00 01 02 ... 1f': Buffer.from(Array.from({ length: 32 }, (_, i) => i)).toString('hex'),
      'counting down by 3': Buffer.from(Array.from({ length: 32 }, (_, i) => (250 - 3 * i) & 0xff)).toString(
        'base64',
      ),
      'the sequence 0-15 twice, shifted': Buffer.from(
        Array.from({ length: 32 }, (_, i) => (i % 16) * 16 + (i >= 16 ? 1 : 0)),
      ).toString('hex'),
      'eight different byte values only': Buffer.from(
        Array.from({ length: 32 }, (_, i) => [0, 7, 42, 99, 128, 200, 231, 255][(i * 5) % 8] ?? 0),
      ).toString('hex'),
      'half of it one byte': Buffer.concat([randomBytes(16), Buffer.alloc(16, 0xff)]).toString('hex'),
    };
    for (const [name, key] of Object.entries(patterns)) expect(refusalOf(key), name).toBe('pattern');
  });

  it('refuses the digest of a common password or word, hex or base64, with or without echo’s newline', () => {
    const digests = {
      "sha256('password'), base64": digest('sha256', 'password', 'base64'),
      "sha256('password\\n'), hex (echo password | sha256sum)": digest('sha256', 'password\n', 'hex'),
      "sha256('qwerty'), upper-case hex": digest('sha256', 'qwerty', 'hex').toUpperCase(),
      "sha512('dragon'), hex": digest('sha512', 'dragon', 'hex'),
      "sha512('letmein\\n'), base64": digest('sha512', 'letmein\n', 'base64'),
      "sha384('monkey'), hex": digest('sha384', 'monkey', 'hex'),
      "sha256('') (the empty string)": digest('sha256', '', 'hex'),
      "sha256('secret')": digest('sha256', 'secret', 'hex'),
      "sha256('people'), a common English word": digest('sha256', 'people', 'hex'),
      'sha256 of the pangram': digest('sha256', 'The quick brown fox jumps over the lazy dog', 'hex'),
    };
    for (const [name, key] of Object.entries(digests)) expect(refusalOf(key), name).toBe('digest');
    // The digest of a secret nobody lists is as good as random bytes.
    expect(refusalOf(digest('sha256', randomBytes(32).toString('hex'), 'hex'))).toBe('accepted');
  });

  it('the commands that never hash with the key skip only the digest look-up', () => {
    const known = digest('sha256', 'password', 'hex');
    expect(refusalOf(known, false)).toBe('accepted');
    expect(refusalOf(base64('the secret key for our visitors pii hashing'), false)).toBe('text');
    expect(refusalOf('deadbeef'.repeat(8), false)).toBe('pattern');
  });

  it('says in one line what is wrong, the rule, the command that makes a key, and how to replace one', () => {
    const refusals: PiiKeyRefusal[] = [
      'not-encoded',
      'too-short',
      'too-long',
      'words',
      'text',
      'pattern',
      'digest',
    ];
    const lines = refusals.map(describePiiKeyRefusal);
    expect(new Set(lines).size).toBe(refusals.length);
    for (const line of lines) {
      expect(line).not.toContain('\n');
      expect(line).toContain('at least 32 random bytes written in hex or base64');
      expect(line).toContain('`openssl rand -hex 32`');
      expect(line).toContain('README "Changing INSIGHTS_PII_KEY"');
    }
  });
});
