import { describe, expect, it } from 'vitest';
import {
  backoffDelay,
  classifyFailure,
  DEFAULT_RETRY_OPTIONS,
  parseRetryAfter,
  resolveRetryOptions,
  retryDelay,
} from '../../src/api/retry-policy.js';

const NOW = Date.UTC(2024, 4, 1, 12, 0, 0);

describe('parseRetryAfter', () => {
  it('reads delay-seconds', () => {
    expect(parseRetryAfter('120', NOW)).toBe(120_000);
    expect(parseRetryAfter(' 0 ', NOW)).toBe(0);
  });

  it('reads an HTTP-date in all three RFC 9110 forms as time from now', () => {
    const in90s = new Date(NOW + 90_000);
    expect(parseRetryAfter(in90s.toUTCString(), NOW)).toBe(90_000);
    expect(parseRetryAfter('Wednesday, 01-May-24 12:00:30 GMT', NOW)).toBe(30_000);
    expect(parseRetryAfter('Wed May  1 12:00:45 2024', NOW)).toBe(45_000);
  });

  it('treats a date in the past as no wait', () => {
    expect(parseRetryAfter(new Date(NOW - 60_000).toUTCString(), NOW)).toBe(0);
  });

  it('ignores what is neither form', () => {
    for (const value of [null, undefined, '', 'soon', '-5', '1.5', '12 apples']) {
      expect(parseRetryAfter(value, NOW), String(value)).toBeUndefined();
    }
  });
});

describe('backoff with full jitter', () => {
  const options = resolveRetryOptions({ baseDelayMs: 100, maxDelayMs: 500 });

  it('doubles the ceiling per attempt up to maxDelayMs', () => {
    const ceilings = [1, 2, 3, 4, 5, 6].map((attempt) => backoffDelay(attempt, options, () => 1));
    expect(ceilings).toEqual([100, 200, 400, 500, 500, 500]);
  });

  it('picks a random point below the ceiling', () => {
    expect(backoffDelay(3, options, () => 0)).toBe(0);
    expect(backoffDelay(3, options, () => 0.25)).toBe(100);
    expect(backoffDelay(3, options, () => 0.5)).toBe(200);
  });

  it('does not overflow for absurd attempt numbers', () => {
    expect(backoffDelay(5000, options, () => 1)).toBe(500);
  });
});

describe('retryDelay with Retry-After', () => {
  const options = resolveRetryOptions({ baseDelayMs: 1000, maxDelayMs: 30_000, retryAfterCapMs: 60_000 });

  it('waits at least the Retry-After', () => {
    expect(retryDelay(1, options, () => 0.1, 5_000)).toBe(5_000);
  });

  it('keeps the backoff when it is longer than the Retry-After', () => {
    expect(retryDelay(4, options, () => 1, 1_000)).toBe(8_000);
  });

  it('clamps a huge Retry-After to retryAfterCapMs', () => {
    expect(retryDelay(1, options, () => 0, 3_600_000)).toBe(60_000);
  });
});

describe('classifyFailure', () => {
  it.each([
    [401, 'auth'],
    [403, 'refused'],
    [404, 'refused'],
    [400, 'fatal'],
    [405, 'fatal'],
    [410, 'fatal'],
    [422, 'fatal'],
    [302, 'fatal'],
    [501, 'fatal'],
    [505, 'fatal'],
    [511, 'fatal'],
    [408, 'retry'],
    [425, 'retry'],
    [429, 'retry'],
    [500, 'retry'],
    [502, 'retry'],
    [503, 'retry'],
    [504, 'retry'],
    [599, 'retry'],
  ] as const)('HTTP %i -> %s', (code, verdict) => {
    expect(classifyFailure({ kind: 'http', status: code })).toBe(verdict);
  });

  it('retries network failures and bad bodies', () => {
    expect(classifyFailure({ kind: 'network' })).toBe('retry');
    expect(classifyFailure({ kind: 'bad-body' })).toBe('retry');
  });
});

describe('resolveRetryOptions', () => {
  it('fills defaults and keeps at least one attempt', () => {
    expect(resolveRetryOptions()).toEqual(DEFAULT_RETRY_OPTIONS);
    expect(DEFAULT_RETRY_OPTIONS).toEqual({
      maxAttempts: 5,
      baseDelayMs: 500,
      maxDelayMs: 30_000,
      retryAfterCapMs: 60_000,
    });
    expect(resolveRetryOptions({ maxAttempts: 0 }).maxAttempts).toBe(1);
  });
});
