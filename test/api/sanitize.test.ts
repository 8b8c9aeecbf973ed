import { describe, expect, it } from 'vitest';
import {
  baseUrlProblem,
  bodySnippet,
  NetworkError,
  scrubSecret,
  scrubUrlCredentials,
  toNetworkError,
} from '../../src/api/sanitize.js';

describe('scrubSecret', () => {
  it('replaces every occurrence of the secret', () => {
    expect(scrubSecret('a SECRET b SECRET', 'SECRET')).toBe('a [redacted] b [redacted]');
  });

  it('leaves text alone when the secret is empty', () => {
    expect(scrubSecret('abc', '')).toBe('abc');
  });
});

describe('bodySnippet', () => {
  it('is one printable line, capped', () => {
    const snippet = bodySnippet(`<html>\r\n\t<body>\u0000\u001b[31m${'z'.repeat(500)}`, 'k3y', 30);
    expect(snippet).toBe('<html> <body> [31mzzzzzzzzzzzz...');
    expect(snippet.length).toBeLessThanOrEqual(33);
  });

  it('removes the key even when it sits at the cut', () => {
    const body = `${'a'.repeat(55)}SECRET-KEY-VALUE`;
    expect(bodySnippet(body, 'SECRET-KEY-VALUE')).not.toContain('SECRET');
  });
});

describe('toNetworkError', () => {
  it('keeps the messages and the innermost code, nothing else', () => {
    const inner = Object.assign(new Error('read ECONNRESET'), {
      code: 'ECONNRESET',
      request: { headers: { authorization: 'k3y-value' } },
    });
    const wrapped = new TypeError('fetch failed', { cause: inner });

    const error = toNetworkError(wrapped, 'k3y-value');

    expect(error).toBeInstanceOf(NetworkError);
    expect(error.message).toBe('fetch failed: read ECONNRESET');
    expect(error.code).toBe('ECONNRESET');
    expect(error.cause).toBeUndefined();
    expect(Object.keys(error).sort()).toEqual(['code', 'name']);
  });

  it('copes with a thrown non-error', () => {
    expect(toNetworkError('boom', 'secret').message).toBe('unknown network failure');
  });
});

describe('scrubUrlCredentials', () => {
  it('hides user and password of any URL in a text, and nothing else', () => {
    expect(
      scrubUrlCredentials(
        'cannot use http://u:p4ss@host/v1/x nor https://only-user@h:8080/ nor http://plain/',
      ),
    ).toBe('cannot use http://[redacted]@host/v1/x nor https://[redacted]@h:8080/ nor http://plain/');
  });

  it('is part of scrubSecret, whatever the secret', () => {
    expect(scrubSecret('at http://u:p@h/', '')).toBe('at http://[redacted]@h/');
  });
});

describe('baseUrlProblem', () => {
  it.each([
    ['http://127.0.0.1:4010', undefined],
    ['https://api.example.com/', undefined],
    ['https://gw.example.com/insights', undefined],
    [
      'https://u:p@api.example.com',
      'holds credentials (user:password@); the API key goes in the Authorization header',
    ],
    ['https://api.example.com/v1', 'ends in /v1, which the client adds to every path itself'],
    ['https://api.example.com/V1/', 'ends in /v1, which the client adds to every path itself'],
    ['https://api.example.com/?x=1', 'has a query string or a fragment'],
    ['ftp://api.example.com', 'is not an http(s) URL'],
    ['api.example.com', 'is not a valid URL'],
  ])('%s -> %s', (url, problem) => {
    expect(baseUrlProblem(url)).toBe(problem);
  });
});
