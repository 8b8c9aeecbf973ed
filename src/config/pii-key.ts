import { hash } from 'node:crypto';
import { COMMON_SECRETS } from './common-secrets.js';
import { COMMON_WORDS } from './common-words.js';

/**
 * INSIGHTS_PII_KEY must be a random secret: with a guessable key anyone holding the warehouse can
 * hash a list of candidate e-mail addresses and read the hashed ones back. So the rule is what a
 * random generator prints, and nothing else: at least 32 bytes, written in hex or base64, as
 * `openssl rand -hex 32` or `openssl rand -base64 32` prints it. Text that merely looks long or
 * odd is no evidence of randomness, so a key that is not hex or base64 is refused whatever it is.
 * Whether bytes are random cannot be proven; these checks refuse the non-random forms people
 * actually write in hex or base64: words in base64's letters, an encoded phrase, a pattern, and
 * a well-known digest. No dictionary package: the word lists ship as code (about 100 kB).
 *
 * The key is used as written (the HMAC key is the text, not the decoded bytes), so a key accepted
 * before keeps giving the same hashes.
 */
export const PII_KEY_MIN_BYTES = 32;
export const PII_KEY_MAX_LENGTH = 4096;

/** Why a key is refused; each has its own line (PII_KEY_REFUSALS). */
export type PiiKeyRefusal =
  | 'not-encoded'
  | 'too-short'
  | 'too-long'
  | 'words'
  | 'text'
  | 'pattern'
  | 'digest';

export type PiiKeyVerdict = { ok: true } | { ok: false; refusal: PiiKeyRefusal };

export const PII_KEY_RULE = `at least ${PII_KEY_MIN_BYTES} random bytes written in hex or base64, as \`openssl rand -hex 32\` or \`openssl rand -base64 32\` prints it`;

/**
 * A key an earlier version accepted can be refused now: the operator must replace it, and a new
 * key changes every hash and pseudonym and leaves the suppression list behind (README).
 */
const REPLACE = 'to replace a key in use, follow README "Changing INSIGHTS_PII_KEY"';

export const PII_KEY_REFUSALS: Readonly<Record<PiiKeyRefusal, string>> = {
  'not-encoded': 'not hex or base64',
  'too-short': `fewer than ${PII_KEY_MIN_BYTES} bytes once decoded`,
  'too-long': `more than ${PII_KEY_MAX_LENGTH} characters`,
  words: 'spells words in base64 letters, which random bytes do not',
  text: 'decodes to text (a phrase or words), not random bytes',
  pattern:
    'decodes to a pattern (a repeated block, a sequence or few different byte values), not random bytes',
  digest: 'the digest of a common password or word, which anyone can compute',
};

/** The one line a refused key gets (never the key): what is wrong, the rule, the command, what to do. */
export function describePiiKeyRefusal(refusal: PiiKeyRefusal): string {
  return `refused: ${PII_KEY_REFUSALS[refusal]}. It must be ${PII_KEY_RULE}; ${REPLACE}`;
}

export const PII_KEY_REQUIRED = `${PII_KEY_RULE}, required when a source's pii is hash or drop`;

/**
 * The rule above. `lookUpDigests` false skips the digest look-up (its table costs some 6,000
 * hashes, about 10-20 ms of CPU, once a process), for the commands that never hash with the key;
 * the other rules cost under a millisecond a key. No I/O, and nothing of the key is kept or
 * returned.
 */
export function checkPiiKey(key: string, lookUpDigests = true): PiiKeyVerdict {
  // Blanks around the key (a trailing newline of a secret file) are no part of the rule.
  const written = key.trim();
  if (written.length > PII_KEY_MAX_LENGTH) return refuse('too-long');
  const bytes = decodeKey(written);
  if (bytes === undefined) return refuse('not-encoded');
  if (bytes.length < PII_KEY_MIN_BYTES) return refuse('too-short');
  if (!HEX.test(written) && spellsWords(written)) return refuse('words');
  if (isText(bytes)) return refuse('text');
  if (isPattern(bytes)) return refuse('pattern');
  if (lookUpDigests && isCommonDigest(bytes)) return refuse('digest');
  return { ok: true };
}

function refuse(refusal: PiiKeyRefusal): PiiKeyVerdict {
  return { ok: false, refusal };
}

const HEX = /^[0-9a-fA-F]+$/;
// Standard base64 (openssl's) or its URL-safe form, one or the other, padded or not.
const BASE64 = /^(?:[A-Za-z0-9+/]+|[A-Za-z0-9_-]+)={0,2}$/;

/**
 * The bytes the key writes, or undefined when it is neither hex nor base64. Hex is tried first:
 * a base64 key made only of hex digits (and of even length) is vanishingly rare. Base64 must be
 * canonical (it encodes back to itself), so stray characters or bits are not silently dropped.
 */
export function decodeKey(written: string): Buffer | undefined {
  if (HEX.test(written)) return written.length % 2 === 0 ? Buffer.from(written, 'hex') : undefined;
  if (!BASE64.test(written)) return undefined;
  const unpadded = written.replace(/=+$/, '');
  // Padding, if any, exactly as much as the length asks for.
  if (written !== unpadded && written !== unpadded + '='.repeat((4 - (unpadded.length % 4)) % 4))
    return undefined;
  const bytes = Buffer.from(unpadded, 'base64url');
  const again = bytes.toString(/[-_]/.test(unpadded) ? 'base64url' : 'base64').replace(/=+$/, '');
  return again === unpadded ? bytes : undefined;
}

/** Common words, and passwords of 4 or more characters, lower case. */
const WORDS: ReadonlySet<string> = new Set([
  ...COMMON_WORDS,
  ...COMMON_SECRETS.filter((word) => word.length >= 4).map((word) => word.toLowerCase()),
]);
const LONGEST_WORD = Math.max(...[...WORDS].map((word) => word.length));

/**
 * Text in base64's alphabet is valid base64 (`InsightsSyncSecretKeyForVisitorDataProduction`
 * decodes to 33 bytes that look random), so the written key is read too: refused when common
 * words of 4 or more letters cover 40% of it. Random base64 matches a given letter, either case,
 * 1 time in 32: a 44-character key holds a 4-letter word of the list about once in 40 keys, and
 * words covering 18 of its characters essentially never. Hex cannot spell a phrase.
 */
export function spellsWords(written: string): boolean {
  const lower = written.toLowerCase();
  const covered = new Uint8Array(lower.length);
  for (let start = 0; start < lower.length; start++) {
    for (let length = LONGEST_WORD; length >= 4; length--) {
      if (start + length > lower.length || !WORDS.has(lower.slice(start, start + length))) continue;
      covered.fill(1, start, start + length);
      break;
    }
  }
  return covered.reduce((sum, one) => sum + one, 0) >= lower.length * 0.4;
}

/**
 * Text: at least 90% printable ASCII (tab, newline and carriage return included), or valid UTF-8
 * of which at least 90% of the characters are letters, marks, digits, punctuation, symbols or
 * blanks. Random bytes are printable ASCII 37% of the time: 29 of 32 printable happens about
 * once in 10^9 keys, and random bytes are valid UTF-8 far more rarely still.
 */
export function isText(bytes: Uint8Array): boolean {
  let printable = 0;
  for (const byte of bytes)
    if ((byte >= 0x20 && byte < 0x7f) || byte === 9 || byte === 10 || byte === 13) printable++;
  if (printable >= bytes.length * 0.9) return true;
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return false;
  }
  const chars = [...text];
  const readable = chars.filter((char) => /[\p{L}\p{M}\p{N}\p{P}\p{S}\s]/u.test(char)).length;
  return readable >= chars.length * 0.9;
}

/**
 * A pattern: fewer than 16 different byte values (32 random bytes hold about 30, and fewer than
 * 16 essentially never), one value making up more than a quarter of the key (a random 32-byte key:
 * about once in 10^12), a block repeated (`deadbeef` x 8), or the same done to the steps between
 * bytes, which catches sequences (00 01 02 ..., counting by any step) and repeated runs of them.
 */
export function isPattern(bytes: Uint8Array): boolean {
  const steps = new Uint8Array(bytes.length - 1);
  for (let i = 1; i < bytes.length; i++) steps[i - 1] = ((bytes[i] ?? 0) - (bytes[i - 1] ?? 0)) & 0xff;
  return isLowVariety(bytes) || isLowVariety(steps) || isPeriodic(bytes) || isPeriodic(steps);
}

const MIN_DISTINCT = 16;

function isLowVariety(values: Uint8Array): boolean {
  const counts = new Map<number, number>();
  for (const value of values) counts.set(value, (counts.get(value) ?? 0) + 1);
  if (counts.size < MIN_DISTINCT) return true;
  return Math.max(...counts.values()) * 4 > values.length;
}

/** Whether the values repeat with some period up to half their length (a random key: 2^-128 at most). */
function isPeriodic(values: Uint8Array): boolean {
  for (let period = 1; period <= values.length / 2; period++) {
    let repeats = true;
    for (let i = period; i < values.length && repeats; i++) repeats = values[i] === values[i - period];
    if (repeats) return true;
  }
  return false;
}

/**
 * Besides the lists: the empty string (its sha256 is the best-known digest of all), the words a
 * key tends to be named after, and the sentences every tutorial hashes.
 */
const OTHER_SECRETS = [
  '',
  'secret',
  'changeme',
  'change-me',
  'pii',
  'pii-key',
  'piikey',
  'insights-sync',
  'insights',
  'hello world',
  'Hello, World!',
  'The quick brown fox jumps over the lazy dog',
  'the quick brown fox jumps over the lazy dog',
  'Lorem ipsum dolor sit amet',
  'Lorem ipsum dolor sit amet, consectetur adipiscing',
  'Lorem ipsum dolor sit amet, consectetur adipiscing elit',
];

/**
 * The digest algorithm of each output length: a digest shorter than 32 bytes (md5, sha1) is
 * already too short, and one written as hex text and then encoded is text.
 */
const DIGEST_BY_LENGTH: ReadonlyMap<number, string> = new Map([
  [32, 'sha256'],
  [48, 'sha384'],
  [64, 'sha512'],
]);

/** The digests of each length, made on the first key of that length: about 6,000 hashes. */
const digestTables = new Map<number, ReadonlySet<string>>();

/**
 * Whether the bytes are the digest of a common secret, as written or with the newline `echo`
 * adds (`echo password | sha256sum`). The words are hashed in the process rather than shipped as
 * digests: the readable list is what a reviewer can check.
 */
export function isCommonDigest(bytes: Uint8Array): boolean {
  const algorithm = DIGEST_BY_LENGTH.get(bytes.length);
  if (algorithm === undefined) return false;
  let table = digestTables.get(bytes.length);
  if (table === undefined) {
    const digests = new Set<string>();
    for (const secret of [...COMMON_SECRETS, ...OTHER_SECRETS]) {
      for (const written of [secret, `${secret}\n`]) digests.add(hash(algorithm, written, 'hex'));
    }
    table = digests;
    digestTables.set(bytes.length, table);
  }
  return table.has(Buffer.from(bytes).toString('hex'));
}
