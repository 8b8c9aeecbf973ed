import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { estimateGuesses, passesCharacterChecks, passesEstimate } from '../../src/config/pii-key.js';

/**
 * The strength estimate must not refuse a key made as the README says: 10,000 random 32-byte
 * keys, half `openssl rand -hex 32`, half `openssl rand -base64 32`, fresh each run (a seed would
 * prove less: the point is that no draw fails), each through both halves of isStrongPiiKey (the
 * estimate taken once, to report the largest). About 50 ms of CPU each: too long for `npm test`, which draws 100 of each form (test/reliability/pii-config.test.ts).
 */
const DRAWS = 5_000;

describe('INSIGHTS_PII_KEY: random keys pass the strength estimate', () => {
  it.each([['hex'], ['base64']] as const)(
    `openssl rand -%s 32: ${DRAWS} draws, every one accepted`,
    (encoding) => {
      let largest = 0;
      const refused: number[] = [];
      for (let i = 0; i < DRAWS; i++) {
        const key = randomBytes(32).toString(encoding);
        const estimate = estimateGuesses(key);
        if (!passesCharacterChecks(key) || !passesEstimate(estimate)) refused.push(estimate.shortfall);
        largest = Math.max(largest, estimate.shortfall);
      }
      // The shortfalls of refused keys only (never a key): how far past the limit they were.
      expect(refused).toEqual([]);
      console.log(`${encoding}: the largest shortfall of ${DRAWS} random keys was ${largest.toFixed(2)}`);
    },
    40 * 60_000,
  );
});
