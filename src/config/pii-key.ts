import { createRequire } from 'node:module';
import type * as ZxcvbnCore from '@zxcvbn-ts/core';
import type * as ZxcvbnCommon from '@zxcvbn-ts/language-common';
import type * as ZxcvbnEn from '@zxcvbn-ts/language-en';

/**
 * INSIGHTS_PII_KEY must be a random secret: with a guessable key anyone holding the warehouse can
 * hash a list of candidate e-mail addresses and read the hashed ones back. A key cannot be proven
 * random, so these checks only refuse the guessable ones:
 * - 32 to 4096 characters;
 * - at least 10 different characters (`openssl rand -hex 32` has 16 symbols, and a 64-character
 *   hex key has fewer than 10 different ones about once in 10^12);
 * - from at least two classes of lower case, upper case, digits and others;
 * - not one block repeated (`Secret123!Secret123!...`);
 * - at least 128 bits by its own character frequencies (length x Shannon entropy per character):
 *   `openssl rand -hex 32` gives about 240 (never below 200 in 200,000 draws), `-base64 32` about
 *   215 (never below 180), `passwordpasswordpasswordpassword` 88;
 * - no words, sequences, keyboard walks or dates that make it much easier to guess than random
 *   characters of its length, by the zxcvbn estimator (see PII_KEY_MAX_SHORTFALL below).
 */
export const PII_KEY_MIN_LENGTH = 32;
export const PII_KEY_MAX_LENGTH = 4096;
const PII_KEY_MIN_DISTINCT = 10;
const PII_KEY_MIN_BITS = 128;

/**
 * zxcvbn counts the guesses an attacker who tries words, names, common passwords, sequences,
 * keyboard walks, repeats and dates first would need; for characters it cannot explain it counts
 * 10 guesses each. The shortfall is how many powers of ten fewer guesses than that brute force
 * (10^length) it finds. Random keys only hold short accidental matches (`dead`, a date in hex
 * digits): in 10,000 draws of `openssl rand -hex 32` the largest shortfall was 5.7 (4 of 10,000
 * above 5), in 1,000 each of `-base64 32` and `-base64 24` 2.5 and 2.0. Guessable keys fall
 * further short: `ThisIsMyVerySecretPiiKey!2026abc` 7.4, `change-me-to-a-random-32-char-secret`
 * 8.3, `zaq1xsw2cde3vfr4bgt5nhy6mju7,ki8` 9.4, `abcdefghijklmnopqrstuvwxyz012345` 27.7.
 *
 * A key the estimator counts at least 10^40 guesses (133 bits, beyond the 128 asked above)
 * passes whatever its shortfall: a hex key's digits read as dates, so the shortfall of a 64-hex
 * key grows with its length, and 10^40 is out of reach of guessing either way. So the shortfall
 * decides for keys under about 47 characters, `-base64 32` included, and none of 10,000 `-hex 32`
 * keys came near the floor (the least: 10^58). A phrase with separators can pass
 * (`The-quick-brown-fox-jumps-over-the-lazy-dog`: shortfall 4.5): the estimator does not know it.
 */
export const PII_KEY_MAX_SHORTFALL = 7;
export const PII_KEY_ENOUGH_GUESSES_LOG10 = 40;

/**
 * The estimator reads only the first 256 characters (its default: the cost grows with the
 * length); a longer key is judged by them. 4 substitutions of l33t speak (`p4ssw0rd`) keep a
 * check of a 64-character hex key near 50 ms of CPU; the default 100 took up to a second, as
 * each digit of a hex key reads as a letter.
 */
const ESTIMATED_CHARS = 256;
const L33T_MAX_SUBSTITUTIONS = 4;

export const PII_KEY_EXPECTED = `a random secret such as \`openssl rand -hex 32\` or \`openssl rand -base64 32\` (${PII_KEY_MIN_LENGTH}-${PII_KEY_MAX_LENGTH} characters, at least ${PII_KEY_MIN_DISTINCT} different ones of at least two kinds among lower case, upper case, digits and symbols, no repeated block, at least ${PII_KEY_MIN_BITS} bits of entropy by character frequency, no words, sequences, keyboard walks or dates that make it guessable), required when a source's pii is hash or drop`;

/** Whether a pii key passes the checks above. Never logs or returns anything of the key. */
export function isStrongPiiKey(key: string): boolean {
  return passesCharacterChecks(key) && passesEstimate(estimateGuesses(key));
}

export function passesEstimate(estimate: GuessEstimate): boolean {
  return estimate.log10 >= PII_KEY_ENOUGH_GUESSES_LOG10 || estimate.shortfall <= PII_KEY_MAX_SHORTFALL;
}

/** The checks above but the estimator's: the length, the characters, a repeated block, the entropy. */
export function passesCharacterChecks(key: string): boolean {
  const chars = [...key];
  if (chars.length < PII_KEY_MIN_LENGTH || chars.length > PII_KEY_MAX_LENGTH) return false;
  const counts = new Map<string, number>();
  for (const char of chars) counts.set(char, (counts.get(char) ?? 0) + 1);
  if (counts.size < PII_KEY_MIN_DISTINCT) return false;
  const kinds = new Set(
    chars.map((char) =>
      /[a-z]/.test(char) ? 'lower' : /[A-Z]/.test(char) ? 'upper' : /\d/.test(char) ? 'digit' : 'other',
    ),
  );
  if (kinds.size < 2) return false;
  for (let period = 1; period <= chars.length / 2; period++) {
    if (chars.length % period === 0 && key === key.slice(0, period).repeat(chars.length / period))
      return false;
  }
  let bits = 0;
  for (const count of counts.values()) bits -= count * Math.log2(count / chars.length);
  return bits >= PII_KEY_MIN_BITS;
}

export interface GuessEstimate {
  /** log10 of the guesses zxcvbn counts for the key (its first 256 characters). */
  log10: number;
  /** How many powers of ten fewer than brute force (10 guesses a character) that is. */
  shortfall: number;
}

export function estimateGuesses(key: string): GuessEstimate {
  const judged = [...key].slice(0, ESTIMATED_CHARS);
  const log10 = estimator().check(judged.join('')).guessesLog10;
  return { log10, shortfall: judged.length - log10 };
}

let loaded: ZxcvbnCore.ZxcvbnFactory | undefined;

/**
 * The estimator and its dictionaries are loaded on the first key checked, not when the CLI
 * starts: they take about 0.6 s of CPU to load and build, which a command without a pii key
 * should not pay (nor a command that never uses the key: LoadConfigOptions.estimatePiiKey). Kept once built: a process checks the same key each time it reads the
 * configuration. `require` because the configuration is read synchronously; the packages ship
 * CommonJS builds. All the lists of both language packages but the 88,799 English surnames, the
 * largest: they cost a fifth of the time and changed no estimate of the guessable keys tried
 * (test/reliability/pii-config.test.ts).
 */
function estimator(): ZxcvbnCore.ZxcvbnFactory {
  if (loaded !== undefined) return loaded;
  const require = createRequire(import.meta.url);
  const core = require('@zxcvbn-ts/core') as typeof ZxcvbnCore;
  const common = require('@zxcvbn-ts/language-common') as typeof ZxcvbnCommon;
  const en = require('@zxcvbn-ts/language-en') as typeof ZxcvbnEn;
  const { 'lastnames-en': _surnames, ...english } = en.dictionary;
  loaded = new core.ZxcvbnFactory({
    dictionary: { ...common.dictionary, ...english },
    graphs: common.adjacencyGraphs,
    maxLength: ESTIMATED_CHARS,
    l33tMaxSubstitutions: L33T_MAX_SUBSTITUTIONS,
  });
  return loaded;
}
